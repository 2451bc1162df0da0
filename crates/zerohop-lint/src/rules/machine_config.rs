//! OpenShift MachineConfigs: systemd mount units, NFS over RDMA, pools.

use std::collections::HashSet;

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use crate::model::{Object, Workspace};
use crate::registry::declare_lint;
use crate::sink::{Sink, join_some, short};
use zerohop_known::cpuset::{CpuSet, Isolcpus};
use zerohop_known::operators::DOCA_DRIVER_READY_FILE;
use zerohop_known::operators::NETWORK_OPERATOR_GROUP;
use zerohop_known::systemd::escape_path as systemd_escape_path;

pub(super) const GROUP: &str = "machineconfiguration.openshift.io";
pub(super) const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";

/// The MachineConfigPools every OpenShift cluster has, each selecting the
/// MachineConfigs of the role of its name.
const DEFAULT_POOLS: [&str; 2] = ["master", "worker"];

/// A systemd unit of a MachineConfig's Ignition config.
pub(super) struct Unit<'a> {
    /// Its index in `spec.config.systemd.units`.
    pub(super) index: usize,
    /// The unit's file name.
    pub(super) name: &'a str,
    /// The unit file's text (empty for a unit only enabled or masked).
    pub(super) contents: &'a str,
    /// `enabled: true`: started at boot through its `[Install]` section.
    pub(super) enabled: bool,
}

/// The systemd units of a MachineConfig.
pub(super) fn units<'a>(object: &Object<'a>) -> Vec<Unit<'a>> {
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
                enabled: unit.get("enabled").and_then(Node::as_bool) == Some(true),
            })
        })
        .collect()
}

/// The path of field `field` of unit `index` of a MachineConfig.
pub(super) fn unit_path(index: usize, field: &'static str) -> [PathStep<'static>; 6] {
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
pub(super) fn directive<'a>(contents: &'a str, key: &str) -> Option<&'a str> {
    contents
        .lines()
        .filter_map(|line| line.trim().strip_prefix(key)?.strip_prefix('='))
        .next_back()
        .map(str::trim)
}

declare_lint! {
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
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL070/fail/`:
    ///
    /// ```text
    /// error[ZL070]: unit `var-mnt-nfs-data.mount` mounts `/var/mnt/nfs-data`; systemd requires the name `var-mnt-nfs\x2ddata.mount`
    ///   --> fail/input.yaml:13:11
    ///    |
    /// 13 |         - name: "var-mnt-nfs-data.mount"
    ///    |           ^^^^
    ///    = object: MachineConfig/99-worker-nfs-rdma
    ///    = help: rename the unit to `var-mnt-nfs\x2ddata.mount`
    ///            systemd-escape --path --suffix=mount /var/mnt/nfs-data
    /// ```
    pub(crate) static MOUNT_UNIT_NAME_MISMATCH = {
        id: "ZL070",
        name: "mount-unit-name-mismatch",
        severity: Error,
        check: mount_unit_name_mismatch,
    };
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

/// Mount options that ask for NFS over RDMA, as the doctor and the plan
/// read them (`zerohop_known::storage::NfsOptions`).
fn is_rdma_options(options: &[&str]) -> bool {
    zerohop_known::storage::NfsOptions::parse(options.iter().copied()).asks_for_rdma()
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

declare_lint! {
    /// An NFS mount over RDMA without `port=20049`.
    ///
    /// ## What it checks
    /// NFS mounts with `proto=rdma` (MachineConfig mount units, StorageClass
    /// and PersistentVolume `mountOptions`) for `port=20049`.
    ///
    /// ## Why it matters
    /// NFS over RDMA listens on port 20049 (RFC 8267 §6.2). The kernel
    /// takes that port for `proto=rdma` when none is given (linux v6.12
    /// `fs/nfs/fs_context.c`, `nfs_fs_context_validate`), but `mount.nfs`
    /// asks the server's rpcbind for the port of an NFSv3 mount unless
    /// `port=` is written (nfs-utils `nfs(5)`, `port=n`), and a server that
    /// has not registered RDMA there refuses the mount. The kernel's own
    /// instructions write the port (`Documentation/filesystems/nfs/nfs-rdma.rst`:
    /// `mount -o rdma,port=20049`): written, it holds whatever the version.
    ///
    /// ## How to fix
    /// Add `port=20049` to the mount options.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL071/fail/`:
    ///
    /// ```text
    /// warning[ZL071]: nfs over rdma without `port=20049`
    ///   --> fail/input.yaml:15:11
    ///    |
    /// 15 |           contents: |
    ///    |           ^^^^^^^^
    ///    = object: MachineConfig/99-worker-nfs-rdma
    ///    = help: add port=20049 to the mount options
    /// ```
    pub(crate) static NFS_RDMA_WITHOUT_PORT_20049 = {
        id: "ZL071",
        name: "nfs-rdma-without-port-20049",
        severity: Warning,
        check: nfs_rdma_without_port,
    };
}

fn nfs_rdma_without_port(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_rdma_mount(workspace, |object, path, options| {
        use zerohop_known::storage::{NFS_RDMA_PORT, NfsOptions};
        let given = NfsOptions::parse(options.iter().copied());
        let port = given.get("port");
        if port.and_then(|p| p.parse::<u16>().ok()) != Some(NFS_RDMA_PORT) {
            let port = port.map(|p| format!("port={p}"));
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

declare_lint! {
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
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL072/fail/`:
    ///
    /// ```text
    /// warning[ZL072]: nfs over rdma without `nconnect`; one connection caps throughput
    ///   --> fail/input.yaml:15:11
    ///    |
    /// 15 |           contents: |
    ///    |           ^^^^^^^^
    ///    = object: MachineConfig/99-worker-nfs-rdma
    ///    = help: add nconnect=16 to the mount options
    /// ```
    pub(crate) static NFS_RDMA_WITHOUT_NCONNECT = {
        id: "ZL072",
        name: "nfs-rdma-without-nconnect",
        severity: Warning,
        check: nfs_rdma_without_nconnect,
    };
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

declare_lint! {
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
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL073/fail/`:
    ///
    /// ```text
    /// warning[ZL073]: role `gpu-worker` is selected by none of the pools in the input (worker)
    ///  --> fail/input.yaml:6:5
    ///   |
    /// 6 |     machineconfiguration.openshift.io/role: gpu-worker
    ///   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    ///   = object: MachineConfig/99-worker-nfs-rdma
    ///   = help: use the role of an existing pool, or add the role to a pool's machineConfigSelector
    /// ```
    pub(crate) static ROLE_WITHOUT_POOL = {
        id: "ZL073",
        name: "role-without-pool",
        severity: Warning,
        check: role_without_pool,
    };
}

/// The roles of the MachineConfigs a pool renders: those its
/// `machineConfigSelector` selects (`matchLabels`, and `matchExpressions`
/// with `In`).
fn selected_roles<'a>(pool: &Object<'a>) -> Vec<&'a str> {
    let mut roles = Vec::new();
    let selector = pool.get(&[
        PathStep::Key("spec"),
        PathStep::Key("machineConfigSelector"),
    ]);
    if let Some(role) = selector
        .and_then(|s| s.get("matchLabels"))
        .and_then(|labels| labels.get(ROLE_LABEL))
        .and_then(Node::as_str)
    {
        roles.push(role);
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
            roles.extend(values.iter().filter_map(Node::as_str));
        }
    }
    roles
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
        selected.extend(selected_roles(pool));
    }
    // The same for every finding: written once.
    let pool_names = join_some(pools.iter().map(|p| short(p.name).to_string()));
    for object in workspace.of_kind(GROUP, "MachineConfig") {
        let Some(role) = object.str_at(&ROLE_PATH) else {
            continue;
        };
        if !selected.contains(role) && !sink.counted_only(object.file) {
            sink.report(
                object,
                &ROLE_PATH,
                format!("role `{role}` is selected by none of the pools in the input ({pool_names})"),
                Remediation::new("use the role of an existing pool, or add the role to a pool's machineConfigSelector"),
            );
        }
    }
}

/// The label every pool carries with its own name, which KubeletConfigs
/// and ContainerRuntimeConfigs select pools by (openshift/machine-config-operator
/// `docs/KubeletConfigDesign.md`: "By default the master/worker
/// MachineConfigPool has labels
/// pools.operator.machineconfiguration.openshift.io/{worker|master}").
const POOL_LABEL_PREFIX: &str = "pools.operator.machineconfiguration.openshift.io/";

/// A kubelet configuration: an OpenShift KubeletConfig, or a
/// KubeletConfiguration file.
struct Kubelet<'a> {
    object: Object<'a>,
    /// The roles of the MachineConfigs that reach the same nodes; `None`
    /// when the input does not say (a KubeletConfiguration file, or a
    /// selector that names no pool).
    roles: Option<HashSet<&'a str>>,
    /// `reservedSystemCPUs`, when set and readable.
    reserved: Option<CpuSet>,
}

fn kubelets<'a>(workspace: &Workspace<'a>) -> Vec<Kubelet<'a>> {
    let pools: Vec<_> = workspace.of_kind(GROUP, "MachineConfigPool").collect();
    let mut out = Vec::new();
    for object in &workspace.objects {
        let (settings, selector) = if object.is(GROUP, "KubeletConfig") {
            (
                object.get(&[PathStep::Key("spec"), PathStep::Key("kubeletConfig")]),
                object.get(&[
                    PathStep::Key("spec"),
                    PathStep::Key("machineConfigPoolSelector"),
                    PathStep::Key("matchLabels"),
                ]),
            )
        } else if object.is("kubelet.config.k8s.io", "KubeletConfiguration") {
            (Some(object.node), None)
        } else {
            continue;
        };
        let reserved = settings
            .and_then(|s| s.get("reservedSystemCPUs"))
            .and_then(Node::scalar_text)
            .and_then(|text| CpuSet::parse(&text).ok());
        let roles = selector.map(|labels| {
            let mut roles = HashSet::new();
            for entry in labels.entries() {
                if let Some(pool) = entry.key.strip_prefix(POOL_LABEL_PREFIX) {
                    roles.insert(pool);
                }
            }
            // A pool of the input carrying every selected label.
            for pool in &pools {
                let pool_labels = pool.get(&[PathStep::Key("metadata"), PathStep::Key("labels")]);
                let carries = labels.entries().iter().all(|wanted| {
                    pool_labels
                        .and_then(|l| l.get(&wanted.key))
                        .and_then(Node::scalar_text)
                        == wanted.value.scalar_text()
                });
                if carries {
                    roles.insert(pool.name);
                    roles.extend(selected_roles(pool));
                }
            }
            // A custom pool's own role label names it too.
            let pools_named: Vec<&str> = roles.iter().copied().collect();
            for pool in pools.iter().filter(|p| pools_named.contains(&p.name)) {
                roles.extend(selected_roles(pool));
            }
            roles
        });
        out.push(Kubelet {
            object: *object,
            roles: roles.filter(|roles| !roles.is_empty()),
            reserved,
        });
    }
    out
}

const KERNEL_ARGUMENTS: [PathStep<'static>; 2] =
    [PathStep::Key("spec"), PathStep::Key("kernelArguments")];

const ROLE_PATH: [PathStep<'static>; 3] = [
    PathStep::Key("metadata"),
    PathStep::Key("labels"),
    PathStep::Key(ROLE_LABEL),
];

/// Every `isolcpus=` of a MachineConfig's kernel arguments, with the index
/// of the argument it is in (one entry may hold several arguments).
fn isolcpus_arguments<'a>(object: &Object<'a>) -> Vec<(usize, &'a str)> {
    object
        .get(&KERNEL_ARGUMENTS)
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(index, item)| Some((index, item.as_str()?)))
        .flat_map(|(index, text)| {
            text.split_whitespace()
                .filter_map(move |arg| Some((index, arg.strip_prefix("isolcpus=")?)))
        })
        .collect()
}

declare_lint! {
    /// A MachineConfig isolates CPUs of the kubelet's shared pool from load balancing (`isolcpus` with `domain`).
    ///
    /// ## What it checks
    /// `isolcpus=` in MachineConfig `spec.kernelArguments` whose flags
    /// include `domain`, or that have no flag (the kernel's default is
    /// `domain`: linux `Documentation/admin-guide/kernel-parameters.txt`,
    /// `isolcpus=` "[flag-list,]<cpu-list> ... (default: domain)"), over
    /// CPUs outside the `reservedSystemCPUs` of the KubeletConfig (or
    /// KubeletConfiguration) of the same nodes. A KubeletConfig reaches the
    /// MachineConfigs of the pools its `machineConfigPoolSelector` selects.
    ///
    /// ## Why it matters
    /// `domain` takes the CPUs out of the scheduler's load balancing: a
    /// thread stays on the CPU it started on ("Isolate from the general SMP
    /// balancing and scheduling algorithms", ibid.). The kubelet's shared
    /// pool is every CPU not given to a Guaranteed container exclusively,
    /// the reserved ones included (Kubernetes documentation, Control CPU
    /// Management Policies on the Node: the static policy "manages a shared
    /// pool of CPUs that initially contains all CPUs in the node"), so with
    /// the usual `isolcpus` list, everything outside `reservedSystemCPUs`,
    /// the shared pool is exactly the isolated CPUs: every process of a
    /// BestEffort or Burstable pod, and the data loaders and NCCL proxy
    /// threads of the training pod's own non-pinned containers, piles up
    /// where it was forked. OpenShift's Node Tuning Operator isolates with
    /// `managed_irq` only (openshift/cluster-node-tuning-operator
    /// `assets/performanceprofile/tuned/openshift-node-performance`,
    /// `isolcpus=managed_irq,${isolated_cores}`).
    ///
    /// ## How to fix
    /// Drop `domain` (write `isolcpus=managed_irq,<cpus>`), and pin the
    /// latency-critical containers with integer CPU requests under the
    /// static CPU manager instead.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL074/fail/`:
    ///
    /// ```text
    /// warning[ZL074]: isolcpus with `domain` takes cpus `2-63` of the kubelet's shared pool (outside reservedSystemCPUs `0-1` of KubeletConfig `gpu-worker-cpu-manager`) out of load balancing: pods' unpinned threads stay where they start
    ///   --> fail/tuning.yaml:13:7
    ///    |
    /// 13 |     - isolcpus=managed_irq,domain,2-63
    ///    |       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    ///    = object: MachineConfig/50-gpu-worker-kernel-args
    ///    = help: isolate with managed_irq only, and pin latency-critical containers through the static cpu manager
    ///            isolcpus=managed_irq,2-63
    /// ```
    pub(crate) static ISOLCPUS_DOMAIN_ON_SHARED_POOL = {
        id: "ZL074",
        name: "isolcpus-domain-on-shared-pool",
        severity: Warning,
        check: isolcpus_domain_on_shared_pool,
    };
}

fn isolcpus_domain_on_shared_pool(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let kubelets = kubelets(workspace);
    for object in workspace.of_kind(GROUP, "MachineConfig") {
        let role = object.str_at(&ROLE_PATH);
        // The kubelet configuration of the same nodes: one that names the
        // pool of this role, else one that does not say which it reaches.
        let reaches = |kubelet: &&Kubelet<'_>| match (&kubelet.roles, role) {
            (Some(roles), Some(role)) => roles.contains(role),
            _ => true,
        };
        let kubelet = kubelets
            .iter()
            .filter(reaches)
            .find(|k| k.reserved.is_some());
        for (index, value) in isolcpus_arguments(object) {
            let Ok(isolated) = Isolcpus::parse(value) else {
                continue;
            };
            if !isolated.isolates_domains() || isolated.cpus.is_empty() {
                continue;
            }
            let reserved = kubelet.and_then(|k| k.reserved.as_ref());
            let shared = reserved.map_or_else(|| isolated.cpus.clone(), |r| isolated.cpus.minus(r));
            if shared.is_empty() {
                continue;
            }
            let how = if isolated.flags.is_empty() {
                "without flags (the default is `domain`)"
            } else {
                "with `domain`"
            };
            let pool = match (kubelet, reserved) {
                (Some(kubelet), Some(reserved)) => format!(
                    "the kubelet's shared pool (outside reservedSystemCPUs `{reserved}` of {} `{}`)",
                    kubelet.object.kind,
                    short(kubelet.object.name)
                ),
                _ => "the kubelet's shared pool".to_owned(),
            };
            let mut path = KERNEL_ARGUMENTS.to_vec();
            path.push(PathStep::Index(index));
            sink.report(
                object,
                &path,
                format!(
                    "isolcpus {how} takes cpus `{shared}` of {pool} out of load balancing: pods' unpinned threads stay where they start"
                ),
                Remediation::new("isolate with managed_irq only, and pin latency-critical containers through the static cpu manager")
                    .command(format!("isolcpus=managed_irq,{}", isolated.cpus)),
            );
        }
    }
}

/// Whether a systemd unit's dependencies name `openibd`, the MOFED init
/// script's unit.
fn after_openibd(contents: &str) -> bool {
    ["After", "Requires", "Wants", "BindsTo"].iter().any(|key| {
        contents
            .lines()
            .filter_map(|line| {
                line.trim()
                    .strip_prefix(key)?
                    .trim_start()
                    .strip_prefix('=')
            })
            .flat_map(str::split_whitespace)
            .any(|unit| unit == "openibd.service" || unit == "openibd")
    })
}

declare_lint! {
    /// An NFS-over-RDMA mount that comes up before the containerised DOCA driver.
    ///
    /// ## What it checks
    /// When a NicClusterPolicy in the input deploys the DOCA driver
    /// container (`spec.ofedDriver`): MachineConfig `.mount` and
    /// `.automount` units of `Type=nfs` with `proto=rdma` (or `rdma`) that
    /// are enabled (mounted at boot, or at first access), or whose
    /// dependencies name `openibd.service`.
    ///
    /// ## Why it matters
    /// Mounted before the driver container runs, the mount loads the
    /// inbox `rpcrdma`, which holds `ib_core` and `mlx5_ib`. The container
    /// then finds storage modules loaded and gives up ("Storage modules are
    /// loaded for current driver, terminating prior driver reload failure
    /// due to UNLOAD_STORAGE_MODULES not set", Mellanox/doca-driver-build
    /// `entrypoint.sh`), or, told to unload them, cannot unload a module a
    /// mount uses: the node keeps the inbox driver, without the DOCA
    /// features the rest of the deployment expects. `openibd.service` is
    /// the host-installed MOFED's unit; with the containerised driver it
    /// does not exist and orders nothing.
    ///
    /// ## How to fix
    /// Do not enable the mount unit; start it from a path unit whose
    /// `PathExists=` is the driver's ready file,
    /// `/run/mellanox/drivers/.driver-ready` (`entrypoint/internal/config/config.go`,
    /// `DriverReadyPath`), and whose `Unit=` names the mount unit (without
    /// it, a path unit starts the `.service` of its own name, ZL076); and
    /// set `UNLOAD_STORAGE_MODULES` in the NicClusterPolicy (ZL038).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL075/fail/`:
    ///
    /// ```text
    /// error[ZL075]: nfs over rdma unit `var-mnt-datasets.mount` is ordered after openibd.service, which the containerised doca driver does not have (NicClusterPolicy `nic-cluster-policy`): the inbox rpcrdma then pins the inbox driver
    ///   --> fail/nfs.yaml:30:11
    ///    |
    /// 30 |           contents: |
    ///    |           ^^^^^^^^
    ///    = object: MachineConfig/60-worker-nfs-rdma
    ///    = help: leave the mount disabled and start it from a path unit on the driver's ready file
    ///            [Path]
    ///            PathExists=/run/mellanox/drivers/.driver-ready
    ///            Unit=var-mnt-datasets.mount
    /// ```
    pub(crate) static NFS_RDMA_MOUNT_BEFORE_DOCA_DRIVER = {
        id: "ZL075",
        name: "nfs-rdma-mount-before-doca-driver",
        severity: Error,
        check: nfs_rdma_mount_before_doca_driver,
    };
}

fn nfs_rdma_mount_before_doca_driver(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let driver = workspace
        .of_kind(NETWORK_OPERATOR_GROUP, "NicClusterPolicy")
        .find(|p| {
            p.get(&[PathStep::Key("spec"), PathStep::Key("ofedDriver")])
                .is_some()
        });
    let Some(driver) = driver else {
        return;
    };
    for object in workspace.of_kind(GROUP, "MachineConfig") {
        let units = units(object);
        // The NFS-over-RDMA mount units, by name without the suffix: an
        // automount of the same name mounts them.
        let rdma_mounts: HashSet<&str> = units
            .iter()
            .filter(|unit| {
                let is_nfs = directive(unit.contents, "Type").is_some_and(|t| t.starts_with("nfs"));
                let options: Vec<&str> = directive(unit.contents, "Options")
                    .map(|o| o.split(',').map(str::trim).collect())
                    .unwrap_or_default();
                is_nfs && is_rdma_options(&options)
            })
            .filter_map(|unit| unit.name.strip_suffix(".mount"))
            .collect();
        for unit in &units {
            let Some((stem, suffix)) = unit.name.rsplit_once('.') else {
                continue;
            };
            if !matches!(suffix, "mount" | "automount") || !rdma_mounts.contains(stem) {
                continue;
            }
            let openibd = after_openibd(unit.contents);
            if !unit.enabled && !openibd {
                continue;
            }
            let (field, why) = if openibd {
                (
                    "contents",
                    "is ordered after openibd.service, which the containerised doca driver does not have",
                )
            } else {
                (
                    "enabled",
                    "is enabled, so it mounts at boot, before the doca driver container",
                )
            };
            sink.report(
                object,
                &unit_path(unit.index, field),
                format!(
                    "nfs over rdma unit `{}` {why} (NicClusterPolicy `{}`): the inbox rpcrdma then pins the inbox driver",
                    short(unit.name),
                    short(driver.name)
                ),
                Remediation::new("leave the mount disabled and start it from a path unit on the driver's ready file")
                    .command(format!(
                        "[Path]\nPathExists={DOCA_DRIVER_READY_FILE}\nUnit={}",
                        unit.name
                    )),
            );
        }
    }
}

/// The priorities the host scripts in the workspace turn PFC on for
/// (`zerohop_known::roce::pfc_priorities`), with the object that says so
/// first: the files and units of MachineConfigs and the values of
/// ConfigMaps. Empty when no script sets PFC, which is the case on
/// Kubernetes, where the QoS script is a host file.
pub(super) fn configured_pfc<'w, 'a>(
    workspace: &'w Workspace<'a>,
) -> (std::collections::BTreeSet<u8>, Option<&'w Object<'a>>) {
    use zerohop_known::roce::pfc_priorities;
    let mut lossless = std::collections::BTreeSet::new();
    let mut first = None;
    let mut scan = |text: &str, object: &'w Object<'a>| {
        // Both ways of setting PFC name it (`--pfc`, `prio-pfc`): a text
        // without `-pfc` is skipped unread, as most of a ConfigMap's values
        // are.
        if !text.contains("-pfc") {
            return;
        }
        let found = pfc_priorities(text);
        if !found.is_empty() {
            first.get_or_insert(object);
            lossless.extend(found);
        }
    };
    for object in workspace.of_kind(GROUP, "MachineConfig") {
        for unit in units(object) {
            scan(unit.contents, object);
        }
        let files = [
            PathStep::Key("spec"),
            PathStep::Key("config"),
            PathStep::Key("storage"),
            PathStep::Key("files"),
        ];
        for file in object.get(&files).map(Node::items).unwrap_or_default() {
            let source = file
                .get("contents")
                .and_then(|c| c.get("source"))
                .and_then(Node::as_str);
            if let Some(text) = source.and_then(data_url) {
                scan(&text, object);
            }
        }
    }
    for object in workspace.of_kind("", "ConfigMap") {
        let data = object.get(&[PathStep::Key("data")]);
        for entry in data.map(Node::entries).unwrap_or_default() {
            if let Some(text) = entry.value.as_str() {
                scan(text, object);
            }
        }
    }
    (lossless, first)
}

/// The text of an RFC 2397 `data:` URL, as Ignition reads a file's
/// `contents.source`: base64 after `;base64,`, percent-encoded otherwise.
/// `None` for another scheme, bad encoding or text that is not UTF-8.
pub(super) fn data_url(url: &str) -> Option<String> {
    use base64::Engine as _;
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    let bytes = if header.ends_with(";base64") {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .ok()?
    } else {
        percent_decode(data)?
    };
    String::from_utf8(bytes).ok()
}

fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(byte) = bytes.next() {
        if byte == b'%' {
            let high = char::from(bytes.next()?).to_digit(16)?;
            let low = char::from(bytes.next()?).to_digit(16)?;
            out.push(u8::try_from(high * 16 + low).ok()?);
        } else {
            out.push(byte);
        }
    }
    Some(out)
}
