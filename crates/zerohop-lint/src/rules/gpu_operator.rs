//! NVIDIA GPU Operator: ClusterPolicy, NVIDIADriver, GPUCluster.

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};
use zerohop_known::operators;

use crate::model::{Object, Workspace};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};
use zerohop_known::operators::GPU_OPERATOR_GROUP;

const GROUP: &str = GPU_OPERATOR_GROUP;

declare_lint! {
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
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL020/fail/`:
    ///
    /// ```text
    /// error[ZL020]: `useOpenKernelModules` is deprecated and no longer honored by the gpu operator
    ///  --> fail/input.yaml:8:5
    ///   |
    /// 8 |     useOpenKernelModules: true
    ///   |     ^^^^^^^^^^^^^^^^^^^^
    ///   = object: ClusterPolicy/cluster-policy
    ///   = help: replace it with `kernelModuleType: open`
    ///           kernelModuleType: open
    ///   = see: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/release-notes.html
    /// ```
    pub(crate) static IGNORED_USE_OPEN_KERNEL_MODULES = {
        id: "ZL020",
        name: "ignored-use-open-kernel-modules",
        severity: Error,
        check: ignored_use_open_kernel_modules,
    };
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

declare_lint! {
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
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL021/fail/`:
    ///
    /// ```text
    /// warning[ZL021]: `spec.psp` is deprecated and ignored by the gpu operator
    ///  --> fail/input.yaml:6:3
    ///   |
    /// 6 |   psp:
    ///   |   ^^^
    ///   = object: ClusterPolicy/cluster-policy
    ///   = help: remove it: pod security policies are no longer supported
    /// ```
    pub(crate) static DEPRECATED_CLUSTERPOLICY_FIELD = {
        id: "ZL021",
        name: "deprecated-clusterpolicy-field",
        severity: Warning,
        check: deprecated_clusterpolicy_field,
    };
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

declare_lint! {
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
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL022/fail/`:
    ///
    /// ```text
    /// error[ZL022]: second ClusterPolicy `cluster-policy-rdma`: only one is used (the oldest, `cluster-policy` if applied first), the others are ignored
    ///   --> fail/input.yaml:12:3
    ///    |
    /// 12 |   name: cluster-policy-rdma
    ///    |   ^^^^
    ///    = object: ClusterPolicy/cluster-policy-rdma
    ///    = help: merge the settings into one ClusterPolicy and delete the others
    /// ```
    pub(crate) static MULTIPLE_CLUSTERPOLICIES = {
        id: "ZL022",
        name: "multiple-clusterpolicies",
        severity: Error,
        check: multiple_clusterpolicies,
    };
}

fn multiple_clusterpolicies(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    // Copies of one ClusterPolicy (the same name) are one object.
    let mut policies: Vec<&Object<'_>> = Vec::new();
    for policy in workspace.of_kind(GROUP, "ClusterPolicy") {
        if !policies.iter().any(|seen| seen.is_same_object(policy)) {
            policies.push(policy);
        }
    }
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

declare_lint! {
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
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL023/fail/`:
    ///
    /// ```text
    /// error[ZL023]: ClusterPolicy `cluster-policy` and GPUCluster `gpu-cluster` cannot co-exist; the ClusterPolicy goes NotReady
    ///  --> fail/input.yaml:2:1
    ///   |
    /// 2 | kind: ClusterPolicy
    ///   | ^^^^
    ///   = object: ClusterPolicy/cluster-policy
    ///   = help: keep either the ClusterPolicy or the GPUCluster, not both
    /// ```
    pub(crate) static CLUSTERPOLICY_WITH_GPUCLUSTER = {
        id: "ZL023",
        name: "clusterpolicy-with-gpucluster",
        severity: Error,
        check: clusterpolicy_with_gpucluster,
    };
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

declare_lint! {
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
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL024/fail/`:
    ///
    /// ```text
    /// warning[ZL024]: gds is enabled but `driver.kernelModuleType` is `auto`; gds 2.17.5 and newer needs the open kernel module
    ///  --> fail/input.yaml:9:5
    ///   |
    /// 9 |     kernelModuleType: auto
    ///   |     ^^^^^^^^^^^^^^^^
    ///   = object: ClusterPolicy/cluster-policy
    ///   = help: set `spec.driver.kernelModuleType: open`
    ///           kernelModuleType: open
    /// ```
    pub(crate) static GDS_WITHOUT_OPEN_KERNEL_MODULES = {
        id: "ZL024",
        name: "gds-without-open-kernel-modules",
        severity: Warning,
        check: gds_without_open_kernel_modules,
    };
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

/// A Helm values document of the GPU Operator chart: a mapping with a
/// top-level value only that chart has.
struct GpuOperatorValues<'a> {
    /// The values file.
    file: &'a str,
    /// The document.
    node: &'a Node,
}

impl GpuOperatorValues<'_> {
    /// Whether the chart creates its ClusterPolicy from these values:
    /// `clusterPolicy.deployCR`, true by default.
    fn deploys_cluster_policy(&self) -> bool {
        self.node
            .get("clusterPolicy")
            .and_then(|policy| policy.get("deployCR"))
            .and_then(Node::as_bool)
            != Some(false)
    }

    /// Whether the values give the operator's Deployment the environment
    /// variable `name` (`operator.env`).
    fn sets_operator_env(&self, name: &str) -> bool {
        self.node
            .get("operator")
            .and_then(|operator| operator.get("env"))
            .is_some_and(|env| {
                env.items()
                    .iter()
                    .any(|var| var.get("name").and_then(Node::as_str) == Some(name))
            })
    }
}

/// The GPU Operator chart's values documents among the run's Helm values.
fn gpu_operator_values<'a>(workspace: &Workspace<'a>) -> Vec<GpuOperatorValues<'a>> {
    workspace
        .helm_values
        .iter()
        .filter(|(_, node)| {
            node.entries()
                .iter()
                .any(|entry| operators::is_gpu_operator_value(&entry.key))
        })
        .map(|&(file, node)| GpuOperatorValues { file, node })
        .collect()
}

declare_lint! {
    /// A ClusterPolicy manifest beside GPU Operator chart values that make the chart create one.
    ///
    /// ## What it checks
    /// ClusterPolicy objects linted together with a Helm values file of
    /// the GPU Operator chart (`values.yaml`, `*-values.yaml`, … with a
    /// value only that chart has, such as `driver`, `toolkit` or
    /// `clusterPolicy`) that leaves `clusterPolicy.deployCR` at its
    /// default, `true`.
    ///
    /// ## Why it matters
    /// With `deployCR` true the chart creates ClusterPolicy
    /// `cluster-policy` from its values when it is installed
    /// (NVIDIA/gpu-operator
    /// `deployments/gpu-operator/templates/clusterpolicy.yaml`). The
    /// operator reconciles only the oldest ClusterPolicy and marks every
    /// other `ignored` (`controllers/clusterpolicy_controller.go`): a
    /// manifest applied after the chart changes nothing, and its settings
    /// (GPUDirect RDMA, the open kernel modules, GDS) never apply.
    ///
    /// ## How to fix
    /// Move the manifest's settings into the values file (the chart's
    /// values spell the ClusterPolicy's fields the same) and delete the
    /// manifest. Or set `clusterPolicy.deployCR: false` and give the
    /// manifest every component's image, which the chart no longer does.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL025/fail/`:
    ///
    /// ```text
    /// error[ZL025]: the gpu-operator chart installed with `fail/gpu-operator-values.yaml` creates ClusterPolicy `cluster-policy` (`clusterPolicy.deployCR` is true); the operator uses the oldest ClusterPolicy and ignores the others, so `gpu-cluster-policy` applied after it does nothing
    ///  --> fail/clusterpolicy.yaml:4:3
    ///   |
    /// 4 |   name: gpu-cluster-policy
    ///   |   ^^^^
    ///   = object: ClusterPolicy/gpu-cluster-policy
    ///   = help: move these settings into `fail/gpu-operator-values.yaml` and delete this ClusterPolicy, or set `clusterPolicy.deployCR: false` there and give this ClusterPolicy every image
    ///   = see: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/getting-started.html
    /// ```
    pub(crate) static CLUSTERPOLICY_BESIDE_CHART_CLUSTERPOLICY = {
        id: "ZL025",
        name: "clusterpolicy-beside-chart-clusterpolicy",
        severity: Error,
        check: clusterpolicy_beside_chart_clusterpolicy,
    };
}

fn clusterpolicy_beside_chart_clusterpolicy(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let values = gpu_operator_values(workspace);
    let Some(chart) = values.iter().find(|v| v.deploys_cluster_policy()) else {
        return;
    };
    for object in workspace.of_kind(GROUP, "ClusterPolicy") {
        sink.report(
            object,
            &[PathStep::Key("metadata"), PathStep::Key("name")],
            format!(
                "the gpu-operator chart installed with `{}` creates ClusterPolicy `{}` (`clusterPolicy.deployCR` is true); the operator uses the oldest ClusterPolicy and ignores the others, so `{}` applied after it does nothing",
                short(chart.file),
                operators::GPU_OPERATOR_CHART_CLUSTER_POLICY,
                short(object.name)
            ),
            Remediation::new(format!(
                "move these settings into `{}` and delete this ClusterPolicy, or set `clusterPolicy.deployCR: false` there and give this ClusterPolicy every image",
                short(chart.file)
            ))
            .doc("https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/getting-started.html"),
        );
    }
}

declare_lint! {
    /// A ClusterPolicy component has no image, and nothing gives the operator one.
    ///
    /// ## What it checks
    /// Every enabled component of a ClusterPolicy (`driver`, `toolkit`,
    /// `devicePlugin`, `dcgm`, `dcgmExporter`, `gfd`, `migManager`,
    /// `nodeStatusExporter`, `gds`, `gdrcopy`; enabled as the operator
    /// defaults them when `enabled` is unset) whose `repository`, `image`
    /// and `version` are all empty, where the operator has no image for it
    /// either:
    /// - linted with the GPU Operator chart's values (a Helm install), for
    ///   every component whose variable the chart does not set on the
    ///   operator (it sets only `DRIVER_MANAGER_IMAGE`, `VALIDATOR_IMAGE`
    ///   and `operator.env`);
    /// - otherwise, for the components whose variable the operator's OLM
    ///   bundle lacks too: `gds` (`GDS_IMAGE`). A ClusterPolicy without
    ///   chart values may be installed either way, so the others are not
    ///   reported.
    ///
    /// ## Why it matters
    /// The operator builds each image from the component's `repository`,
    /// `image` and `version`, and when they are empty reads an environment
    /// variable of its own Deployment (`DRIVER_IMAGE`, `GDS_IMAGE`, …);
    /// without either it fails with "empty image path provided through
    /// both ClusterPolicy CR and ENV" and deploys nothing
    /// (NVIDIA/gpu-operator `api/nvidia/v1/clusterpolicy_types.go`,
    /// `ImagePath`). OLM sets the variables from the bundle's CSV
    /// (`bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml`),
    /// which has no `GDS_IMAGE`; the Helm chart sets almost none, and puts
    /// the images into the ClusterPolicy it creates instead
    /// (`deployments/gpu-operator/templates/operator.yaml`,
    /// `templates/clusterpolicy.yaml`) — which `clusterPolicy.deployCR:
    /// false` turns off.
    ///
    /// ## How to fix
    /// Set the component's `repository`, `image` and `version` (the chart's
    /// `values.yaml` of the operator release lists them), or let the chart
    /// create the ClusterPolicy from values.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL026/fail/`:
    ///
    /// ```text
    /// error[ZL026]: `spec.driver` is enabled without `repository`, `image` and `version`, and the gpu-operator chart sets no `DRIVER_IMAGE`: the operator fails with "empty image path provided through both ClusterPolicy CR and ENV"
    ///  --> fail/clusterpolicy.yaml:9:3
    ///   |
    /// 9 |   driver:
    ///   |   ^^^^^^
    ///   = object: ClusterPolicy/gpu-cluster-policy
    ///   = help: set `spec.driver.repository`, `image` and `version` (the gpu-operator chart's values.yaml of your release lists them)
    /// ```
    pub(crate) static CLUSTERPOLICY_WITHOUT_IMAGES = {
        id: "ZL026",
        name: "clusterpolicy-without-images",
        severity: Error,
        check: clusterpolicy_without_images,
    };
}

/// Whether a component's image is left to the operator's environment: its
/// `repository`, `image` and `version` all unset or empty.
fn names_no_image(component: &Node) -> bool {
    ["repository", "image", "version"].iter().all(|key| {
        component
            .get(key)
            .and_then(Node::scalar_text)
            .is_none_or(|text| text.is_empty())
    })
}

fn clusterpolicy_without_images(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let values = gpu_operator_values(workspace);
    for object in workspace.of_kind(GROUP, "ClusterPolicy") {
        let Some(spec) = object.get(&[PathStep::Key("spec")]) else {
            continue;
        };
        for component in operators::CLUSTER_POLICY_COMPONENTS {
            let node = spec.get(component.key);
            let enabled = node
                .and_then(|n| n.get("enabled"))
                .and_then(Node::as_bool)
                .unwrap_or(component.enabled_by_default);
            if !enabled || !node.is_none_or(names_no_image) {
                continue;
            }
            // The driver of an NVIDIADriver resource has its own image.
            let by_driver_crd = component.key == "driver"
                && node
                    .and_then(|n| n.get("useNvidiaDriverCRD"))
                    .and_then(Node::as_bool)
                    == Some(true);
            if by_driver_crd {
                continue;
            }
            let provided = if values.is_empty() {
                component.in_olm_bundle
            } else {
                operators::GPU_OPERATOR_CHART_IMAGE_ENV.contains(&component.env)
                    || values.iter().any(|v| v.sets_operator_env(component.env))
            };
            if provided {
                continue;
            }
            let installed = if values.is_empty() {
                "the operator's OLM bundle has no"
            } else {
                "the gpu-operator chart sets no"
            };
            let path = [PathStep::Key("spec"), PathStep::Key(component.key)];
            sink.report(
                object,
                &path,
                format!(
                    "`spec.{}` is enabled without `repository`, `image` and `version`, and {installed} `{}`: the operator fails with \"empty image path provided through both ClusterPolicy CR and ENV\"",
                    component.key, component.env
                ),
                Remediation::new(format!(
                    "set `spec.{}.repository`, `image` and `version` (the gpu-operator chart's values.yaml of your release lists them)",
                    component.key
                )),
            );
        }
    }
}
