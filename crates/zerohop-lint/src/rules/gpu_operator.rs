//! NVIDIA GPU Operator: ClusterPolicy, NVIDIADriver, GPUCluster.

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use crate::model::Workspace;
use crate::registry::declare_rule;
use crate::sink::{Sink, short};

const GROUP: &str = "nvidia.com";

declare_rule! {
    /// `useOpenKernelModules` is set; the GPU Operator no longer reads it.
    ///
    /// ## What it checks
    /// ClusterPolicy `spec.driver.useOpenKernelModules` and NVIDIADriver
    /// `spec.useOpenKernelModules`.
    ///
    /// ## Why it matters
    /// Since GPU Operator v25.3.0 the field is "no longer honored": the
    /// driver type comes from `kernelModuleType` (default `auto`). A policy
    /// that relies on `useOpenKernelModules: true` may get the proprietary
    /// module, which has no DMA-BUF support, so GPUDirect RDMA and
    /// GPUDirect Storage (≥ 2.17.5 needs the open module) fail.
    ///
    /// ## How to fix
    /// Replace it with `kernelModuleType: open` (or `proprietary`).
    pub(crate) static IGNORED_USE_OPEN_KERNEL_MODULES = "ZL020", "ignored-use-open-kernel-modules", Error, ignored_use_open_kernel_modules;
}

fn ignored_use_open_kernel_modules(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let places: [(&str, &[PathStep<'static>]); 2] = [
        (
            "ClusterPolicy",
            &[PathStep::Key("spec"), PathStep::Key("driver")],
        ),
        ("NVIDIADriver", &[PathStep::Key("spec")]),
    ];
    for (kind, parent) in places {
        for object in workspace.of_kind(GROUP, kind) {
            let mut path = parent.to_vec();
            path.push(PathStep::Key("useOpenKernelModules"));
            let Some(value) = object.get(&path) else {
                continue;
            };
            let wanted = if value.as_bool() == Some(false) {
                "proprietary"
            } else {
                "open"
            };
            sink.report(
                object,
                &path,
                "`useOpenKernelModules` is deprecated and no longer honored by the gpu operator",
                Remediation::new(format!("replace it with `kernelModuleType: {wanted}`"))
                    .command(format!("kernelModuleType: {wanted}"))
                    .doc("https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/release-notes.html"),
            );
        }
    }
}

/// ClusterPolicy fields the CRD marks deprecated, and what to do instead.
const DEPRECATED_FIELDS: &[(&[&str], &str)] = &[
    (
        &["psp"],
        "remove it: pod security policies are no longer supported",
    ),
    (&["kataManager"], "remove it: the kata manager is ignored"),
    (
        &["cdi", "default"],
        "remove it: cdi is the default runtime mode when `cdi.enabled` is true",
    ),
    (
        &["dcgm", "hostPort"],
        "remove it: dcgm no longer listens on a host port",
    ),
    (
        &["driver", "licensingConfig", "configMapName"],
        "use `driver.licensingConfig.secretName` instead",
    ),
    (
        &["operator", "defaultRuntime"],
        "remove it: the runtime is detected",
    ),
    (
        &["operator", "initContainer"],
        "remove it: the field is ignored",
    ),
];

declare_rule! {
    /// A ClusterPolicy sets a field the GPU Operator has deprecated.
    ///
    /// ## What it checks
    /// ClusterPolicy `spec.psp`, `spec.kataManager`, `spec.cdi.default`,
    /// `spec.dcgm.hostPort`, `spec.driver.licensingConfig.configMapName`,
    /// `spec.operator.defaultRuntime` and `spec.operator.initContainer`.
    ///
    /// ## Why it matters
    /// The CRD still accepts them but the operator ignores them, so the
    /// policy does not do what it says.
    ///
    /// ## How to fix
    /// Remove the field, or move to its replacement (`secretName` for the
    /// licensing config).
    pub(crate) static DEPRECATED_CLUSTERPOLICY_FIELD = "ZL021", "deprecated-clusterpolicy-field", Warning, deprecated_clusterpolicy_field;
}

fn deprecated_clusterpolicy_field(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in workspace.of_kind(GROUP, "ClusterPolicy") {
        for (field, fix) in DEPRECATED_FIELDS {
            let mut path = vec![PathStep::Key("spec")];
            path.extend(field.iter().map(|key| PathStep::Key(key)));
            if object.get(&path).is_some() {
                sink.report(
                    object,
                    &path,
                    format!(
                        "`spec.{}` is deprecated and ignored by the gpu operator",
                        field.join(".")
                    ),
                    Remediation::new(*fix),
                );
            }
        }
    }
}

declare_rule! {
    /// More than one ClusterPolicy; the GPU Operator ignores all but one.
    ///
    /// ## What it checks
    /// The number of ClusterPolicy objects in the input.
    ///
    /// ## Why it matters
    /// ClusterPolicy is a singleton: the oldest one is used and every other
    /// gets status `Ignored`, so its settings never apply.
    ///
    /// ## How to fix
    /// Merge the settings into one ClusterPolicy and delete the others.
    pub(crate) static MULTIPLE_CLUSTERPOLICIES = "ZL022", "multiple-clusterpolicies", Error, multiple_clusterpolicies;
}

fn multiple_clusterpolicies(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let policies: Vec<_> = workspace.of_kind(GROUP, "ClusterPolicy").collect();
    if let [first, rest @ ..] = policies.as_slice() {
        for object in rest {
            sink.report(
                object,
                &[PathStep::Key("metadata"), PathStep::Key("name")],
                format!(
                    "second ClusterPolicy `{}`: only one is used (the oldest, `{}` if applied first), the others are ignored",
                    short(object.name),
                    short(first.name)
                ),
                Remediation::new("merge the settings into one ClusterPolicy and delete the others"),
            );
        }
    }
}

declare_rule! {
    /// A ClusterPolicy and a GPUCluster in the same cluster.
    ///
    /// ## What it checks
    /// Whether the input has both a ClusterPolicy and a GPUCluster.
    ///
    /// ## Why it matters
    /// "A cluster cannot use GPUCluster and ClusterPolicy at the same time":
    /// the ClusterPolicy goes NotReady with "ClusterPolicy and GPUCluster
    /// cannot co-exist" and its stack is not deployed.
    ///
    /// ## How to fix
    /// Choose one: ClusterPolicy (device plugin stack) or GPUCluster (DRA
    /// stack), and delete the other.
    pub(crate) static CLUSTERPOLICY_WITH_GPUCLUSTER = "ZL023", "clusterpolicy-with-gpucluster", Error, clusterpolicy_with_gpucluster;
}

fn clusterpolicy_with_gpucluster(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let Some(cluster) = workspace.of_kind(GROUP, "GPUCluster").next() else {
        return;
    };
    for object in workspace.of_kind(GROUP, "ClusterPolicy") {
        sink.report(
            object,
            &[PathStep::Key("kind")],
            format!(
                "ClusterPolicy `{}` and GPUCluster `{}` cannot co-exist; the ClusterPolicy goes NotReady",
                short(object.name),
                short(cluster.name)
            ),
            Remediation::new("keep either the ClusterPolicy or the GPUCluster, not both"),
        );
    }
}

declare_rule! {
    /// GPUDirect Storage is enabled without the open GPU kernel modules.
    ///
    /// ## What it checks
    /// A ClusterPolicy with `spec.gds.enabled: true` whose
    /// `spec.driver.kernelModuleType` is not `open`.
    ///
    /// ## Why it matters
    /// The GDS driver the operator deploys (2.17.5 and newer) only works with
    /// the open kernel module; with `auto` the operator may pick the
    /// proprietary one on older driver branches, and NVIDIADriver rejects the
    /// combination outright.
    ///
    /// ## How to fix
    /// Set `spec.driver.kernelModuleType: open`.
    pub(crate) static GDS_WITHOUT_OPEN_KERNEL_MODULES = "ZL024", "gds-without-open-kernel-modules", Warning, gds_without_open_kernel_modules;
}

fn gds_without_open_kernel_modules(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in workspace.of_kind(GROUP, "ClusterPolicy") {
        let gds = object.get(&[
            PathStep::Key("spec"),
            PathStep::Key("gds"),
            PathStep::Key("enabled"),
        ]);
        if gds.and_then(Node::as_bool) != Some(true) {
            continue;
        }
        let path = [
            PathStep::Key("spec"),
            PathStep::Key("driver"),
            PathStep::Key("kernelModuleType"),
        ];
        let current = object.str_at(&path);
        if current == Some("open") {
            continue;
        }
        sink.report(
            object,
            &path,
            format!(
                "gds is enabled but `driver.kernelModuleType` is {}; gds 2.17.5 and newer needs the open kernel module",
                current.map_or_else(|| "unset (auto)".to_owned(), |value| format!("`{value}`"))
            ),
            Remediation::new("set `spec.driver.kernelModuleType: open`").command("kernelModuleType: open"),
        );
    }
}
