//! OpenShift MachineConfigs: systemd mount units, NFS over RDMA, pools.

use std::collections::HashSet;

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use crate::model::{Object, Workspace};
use crate::registry::declare_rule;
use crate::sink::{Sink, join_some, short};
use zerohop_known::systemd::escape_path as systemd_escape_path;

const GROUP: &str = "machineconfiguration.openshift.io";
const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";

/// The MachineConfigPools every OpenShift cluster has, each selecting the
/// MachineConfigs of the role of its name.
const DEFAULT_POOLS: [&str; 2] = ["master", "worker"];

/// A systemd unit of a MachineConfig's Ignition config.
struct Unit<'a> {
    index: usize,
    name: &'a str,
    contents: &'a str,
}

fn units<'a>(object: &Object<'a>) -> Vec<Unit<'a>> {
    let path = [
        PathStep::Key("spec"),
        PathStep::Key("config"),
        PathStep::Key("systemd"),
        PathStep::Key("units"),
    ];
    object
        .get(&path)
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(index, unit)| {
            Some(Unit {
                index,
                name: unit.get("name")?.as_str()?,
                contents: unit.get("contents").and_then(Node::as_str).unwrap_or(""),
            })
        })
        .collect()
}

fn unit_path(index: usize, field: &'static str) -> [PathStep<'static>; 6] {
    [
        PathStep::Key("spec"),
        PathStep::Key("config"),
        PathStep::Key("systemd"),
        PathStep::Key("units"),
        PathStep::Index(index),
        PathStep::Key(field),
    ]
}

/// The value of `key=` in a unit file (the last one wins, as in systemd).
fn directive<'a>(contents: &'a str, key: &str) -> Option<&'a str> {
    contents
        .lines()
        .filter_map(|line| line.trim().strip_prefix(key)?.strip_prefix('='))
        .next_back()
        .map(str::trim)
}

declare_rule! {
    /// A systemd mount unit whose name is not the escaped path it mounts.
    ///
    /// ## What it checks
    /// `.mount` and `.automount` units in MachineConfig
    /// `spec.config.systemd.units`: the name must equal `systemd-escape
    /// --path` of the unit's `Where=` (`/var/mnt/nfs-data` →
    /// `var-mnt-nfs\x2ddata.mount`).
    ///
    /// ## Why it matters
    /// systemd refuses the unit ("Where= setting doesn't match unit name"),
    /// so the file system is never mounted and the node boots without it.
    ///
    /// ## How to fix
    /// Rename the unit to the output of `systemd-escape --path --suffix=mount
    /// <Where>`.
    pub(crate) static MOUNT_UNIT_NAME_MISMATCH = "ZL070", "mount-unit-name-mismatch", Error, mount_unit_name_mismatch;
}

fn mount_unit_name_mismatch(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in workspace.of_kind(GROUP, "MachineConfig") {
        for unit in units(object) {
            let Some((stem, suffix)) = unit.name.rsplit_once('.') else {
                continue;
            };
            if !matches!(suffix, "mount" | "automount") {
                continue;
            }
            let Some(target) = directive(unit.contents, "Where") else {
                continue;
            };
            let expected = systemd_escape_path(target);
            if stem != expected {
                sink.report(
                    object,
                    &unit_path(unit.index, "name"),
                    format!("unit `{}` mounts `{target}`; systemd requires the name `{expected}.{suffix}`", unit.name),
                    Remediation::new(format!("rename the unit to `{expected}.{suffix}`"))
                        .command(format!("systemd-escape --path --suffix={suffix} {target}")),
                );
            }
        }
    }
}

/// Mount options that ask for NFS over RDMA.
fn is_rdma_options(options: &[&str]) -> bool {
    options.iter().any(|o| *o == "rdma" || *o == "proto=rdma")
}

/// Every NFS-over-RDMA mount in the workspace: MachineConfig mount units,
/// StorageClass and PersistentVolume `mountOptions`. Calls `report` with the
/// object, the path to point at, and the options.
fn each_rdma_mount(
    workspace: &Workspace<'_>,
    mut report: impl FnMut(&Object<'_>, &[PathStep<'_>], &[&str]),
) {
    for object in workspace.of_kind(GROUP, "MachineConfig") {
        for unit in units(object) {
            let is_nfs = directive(unit.contents, "Type").is_some_and(|t| t.starts_with("nfs"));
            let options: Vec<&str> = directive(unit.contents, "Options")
                .map(|o| o.split(',').map(str::trim).collect())
                .unwrap_or_default();
            if is_nfs && is_rdma_options(&options) {
                report(object, &unit_path(unit.index, "contents"), &options);
            }
        }
    }
    for object in &workspace.objects {
        let path: &[PathStep<'_>] = match (object.group(), object.kind) {
            ("storage.k8s.io", "StorageClass") => &[PathStep::Key("mountOptions")],
            ("", "PersistentVolume") => &[PathStep::Key("spec"), PathStep::Key("mountOptions")],
            _ => continue,
        };
        let options: Vec<&str> = object
            .get(path)
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .filter_map(Node::as_str)
            .flat_map(|o| o.split(','))
            .map(str::trim)
            .collect();
        if is_rdma_options(&options) {
            report(object, path, &options);
        }
    }
}

declare_rule! {
    /// An NFS mount over RDMA without `port=20049`.
    ///
    /// ## What it checks
    /// NFS mounts with `proto=rdma` (MachineConfig mount units, StorageClass
    /// and PersistentVolume `mountOptions`) for `port=20049`.
    ///
    /// ## Why it matters
    /// NFS over RDMA listens on port 20049; without the option the client
    /// connects to 2049 and the mount fails or hangs (servers that do not
    /// answer RDMA on 2049).
    ///
    /// ## How to fix
    /// Add `port=20049` to the mount options.
    pub(crate) static NFS_RDMA_WITHOUT_PORT_20049 = "ZL071", "nfs-rdma-without-port-20049", Error, nfs_rdma_without_port;
}

fn nfs_rdma_without_port(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_rdma_mount(workspace, |object, path, options| {
        if !options.contains(&"port=20049") {
            let port = options.iter().find(|o| o.starts_with("port="));
            sink.report(
                object,
                path,
                match port {
                    Some(port) => {
                        format!("nfs over rdma with `{port}`; the rdma transport listens on 20049")
                    }
                    None => "nfs over rdma without `port=20049`".to_owned(),
                },
                Remediation::new("add port=20049 to the mount options"),
            );
        }
    });
}

declare_rule! {
    /// An NFS mount over RDMA without `nconnect`.
    ///
    /// ## What it checks
    /// NFS mounts with `proto=rdma` for an `nconnect=` option.
    ///
    /// ## Why it matters
    /// One connection (one queue pair) caps a mount far below what a
    /// 200–400 Gb/s NIC can carry; `nconnect` spreads I/O over several.
    ///
    /// ## How to fix
    /// Add `nconnect=16` (up to 16) to the mount options.
    pub(crate) static NFS_RDMA_WITHOUT_NCONNECT = "ZL072", "nfs-rdma-without-nconnect", Warning, nfs_rdma_without_nconnect;
}

fn nfs_rdma_without_nconnect(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_rdma_mount(workspace, |object, path, options| {
        if !options.iter().any(|o| o.starts_with("nconnect=")) {
            sink.report(
                object,
                path,
                "nfs over rdma without `nconnect`; one connection caps throughput",
                Remediation::new("add nconnect=16 to the mount options"),
            );
        }
    });
}

declare_rule! {
    /// A MachineConfig's role matches no MachineConfigPool in the input.
    ///
    /// ## What it checks
    /// The `machineconfiguration.openshift.io/role` label of each
    /// MachineConfig against the `machineConfigSelector` of the
    /// MachineConfigPools in the input (`matchLabels`, and `matchExpressions`
    /// with `In`), and of the pools `master` and `worker`, which every
    /// OpenShift cluster has: the Machine Config Operator creates them from
    /// its own manifests (openshift/machine-config-operator
    /// `manifests/master.machineconfigpool.yaml`,
    /// `manifests/worker.machineconfigpool.yaml`), and custom pools add to
    /// them (`docs/custom-pools.md`). Runs only when the input has a pool.
    ///
    /// ## Why it matters
    /// No pool renders the MachineConfig, so no node gets the kernel
    /// arguments, mounts or units it carries, and nothing reports an error.
    ///
    /// ## How to fix
    /// Use the role of an existing pool, or add the role to the pool's
    /// `machineConfigSelector`.
    pub(crate) static ROLE_WITHOUT_POOL = "ZL073", "role-without-pool", Warning, role_without_pool;
}

fn role_without_pool(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let pools: Vec<_> = workspace.of_kind(GROUP, "MachineConfigPool").collect();
    if pools.is_empty() {
        return;
    }
    // Every role some pool selects, gathered once, rather than every pool
    // tried for every MachineConfig; the cluster's own pools first.
    let mut selected: HashSet<&str> = DEFAULT_POOLS.into_iter().collect();
    for pool in &pools {
        let selector = pool.get(&[
            PathStep::Key("spec"),
            PathStep::Key("machineConfigSelector"),
        ]);
        if let Some(role) = selector
            .and_then(|s| s.get("matchLabels"))
            .and_then(|labels| labels.get(ROLE_LABEL))
            .and_then(Node::as_str)
        {
            selected.insert(role);
        }
        let expressions = selector
            .and_then(|s| s.get("matchExpressions"))
            .map(Node::items)
            .unwrap_or_default();
        for expression in expressions {
            if expression.get("key").and_then(Node::as_str) == Some(ROLE_LABEL)
                && expression.get("operator").and_then(Node::as_str) == Some("In")
            {
                let values = expression
                    .get("values")
                    .map(Node::items)
                    .unwrap_or_default();
                selected.extend(values.iter().filter_map(Node::as_str));
            }
        }
    }
    for object in workspace.of_kind(GROUP, "MachineConfig") {
        let path = [
            PathStep::Key("metadata"),
            PathStep::Key("labels"),
            PathStep::Key(ROLE_LABEL),
        ];
        let Some(role) = object.str_at(&path) else {
            continue;
        };
        if !selected.contains(role) {
            sink.report(
                object,
                &path,
                format!(
                    "role `{role}` is selected by none of the pools in the input ({})",
                    join_some(pools.iter().map(|p| short(p.name).to_string()))
                ),
                Remediation::new("use the role of an existing pool, or add the role to a pool's machineConfigSelector"),
            );
        }
    }
}
