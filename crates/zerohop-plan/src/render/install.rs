//! Installing the operators. On Kubernetes the NVIDIA charts install them
//! from Helm values files under `helm/`; the GPU Operator chart creates the
//! one ClusterPolicy from its values, so the set has no ClusterPolicy of
//! its own (a second one would be ignored: the operator keeps the oldest,
//! NVIDIA/gpu-operator `controllers/clusterpolicy_controller.go`). On
//! OpenShift, OLM installs them from the Subscriptions of a numbered step,
//! and a `NodeFeatureDiscovery` instance makes NFD label the nodes.

use serde_json::{Value, json};
use zerohop_known::nic::MELLANOX_VENDOR_HEX;
use zerohop_known::operators::{
    GPU_OPERATOR_CHART, GPU_OPERATOR_CHART_CLUSTER_POLICY, GPU_OPERATOR_OLM, HelmChart,
    NETWORK_OPERATOR_CHART, NETWORK_OPERATOR_OLM, NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX, NFD_OLM,
    NFD_PCI_DEVICE_CLASSES, NVIDIA_HELM_REPOSITORY, NVIDIA_HELM_REPOSITORY_NAME,
    OLM_CATALOG_NAMESPACE, OPENSHIFT_NFD_NAMESPACE, OlmPackage, SRIOV_OLM, nfd_pci_vendor_label,
};
use zerohop_known::shell::quote;

use super::{ManifestFile, Step, gpu};
use crate::intent::RdmaMode;
use crate::plan::Plan;

/// The directory of the Helm values files; nothing under it is applied
/// with `kubectl`.
const HELM_DIR: &str = "helm/";
/// The GPU Operator chart's values.
const GPU_VALUES: &str = "helm/gpu-operator-values.yaml";
/// The Network Operator chart's values.
const NETWORK_VALUES: &str = "helm/network-operator-values.yaml";

/// Whether a step's file is Helm values, installed with `helm install`
/// rather than applied.
pub(crate) fn is_helm_values(path: &str) -> bool {
    path.starts_with(HELM_DIR)
}

/// The Network Operator chart's values: its NFD is the cluster's one (its
/// worker labels the GPUs' PCI class and its NodeFeatureRule the NICs',
/// Mellanox/network-operator `deployment/network-operator/values.yaml` and
/// `templates/nodefeaturerules.yaml`), so the GPU Operator's is off: "ensure
/// only one instance of Node Feature Discovery (NFD) is installed"
/// (network-operator-docs `docs/platform-support.rst`). The SR-IOV operator
/// comes with it in `sriov` mode, advertising under the plan's prefix.
fn network_operator_values(plan: &Plan) -> Value {
    let sriov = plan.rdma_mode == RdmaMode::Sriov;
    let mut values = json!({
        "nfd": {"enabled": true, "deployNodeFeatureRules": true},
        "sriovNetworkOperator": {"enabled": sriov},
    });
    if sriov && plan.resource_prefix != NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX {
        values["sriov-network-operator"] =
            json!({"operator": {"resourcePrefix": plan.resource_prefix}});
    }
    values
}

/// The GPU Operator chart's values: the ClusterPolicy's settings, which
/// the chart renders into ClusterPolicy `cluster-policy` with every
/// component's image (`clusterPolicy.deployCR`, true by default, spelled
/// out); NFD is the Network Operator's.
fn gpu_operator_values(plan: &Plan) -> Value {
    let mut values = gpu::settings(plan);
    values["nfd"] = json!({"enabled": false});
    values["clusterPolicy"] = json!({"deployCR": true});
    values
}

/// A values file with a comment saying how it is installed.
pub(crate) fn values_file(path: &str, install: &str, values: &Value) -> ManifestFile {
    // Serializing a serde_json::Value cannot fail: keys are strings.
    let yaml = serde_saphyr::to_string(values).unwrap_or_default();
    let mut contents = format!("# Helm values, not a manifest: {install}\n");
    contents.push_str(&yaml);
    if !contents.ends_with('\n') {
        contents.push('\n');
    }
    super::plain(path, contents)
}

/// Kubernetes: the values files under `helm/`.
pub(crate) fn values_files(plan: &Plan) -> Vec<ManifestFile> {
    vec![
        values_file(
            NETWORK_VALUES,
            &network_operator_install(plan),
            &network_operator_values(plan),
        ),
        values_file(
            GPU_VALUES,
            &gpu_operator_install(plan),
            &gpu_operator_values(plan),
        ),
    ]
}

/// `helm install` of `chart` at operator release `release`, in `namespace`,
/// with the values file `values`, the version pinned.
fn helm_install(chart: &HelmChart, release: &str, namespace: &str, values: &str) -> String {
    format!(
        "helm install {} {NVIDIA_HELM_REPOSITORY_NAME}/{} --version {} --namespace {} --create-namespace -f {values} --wait",
        chart.release,
        chart.chart,
        quote(&chart.chart_version(release)),
        quote(namespace),
    )
}

fn network_operator_install(plan: &Plan) -> String {
    helm_install(
        &NETWORK_OPERATOR_CHART,
        &plan.network_operator_version,
        &plan.network_operator_namespace,
        NETWORK_VALUES,
    )
}

fn gpu_operator_install(plan: &Plan) -> String {
    helm_install(
        &GPU_OPERATOR_CHART,
        &plan.gpu_operator_version,
        &plan.gpu_operator_namespace,
        GPU_VALUES,
    )
}

/// The command that installs a step's file when it is Helm values.
pub(crate) fn install_command(plan: &Plan, path: &str) -> Option<String> {
    match path {
        GPU_VALUES => Some(gpu_operator_install(plan)),
        NETWORK_VALUES => Some(network_operator_install(plan)),
        _ => super::storage::install_command(path),
    }
}

/// Kubernetes: the GPU Operator's release, at the place of the
/// ClusterPolicy: after the DOCA driver is ready (network-operator-docs
/// `docs/deployment-guide-kubernetes.rst`, GPUDirect RDMA: the Network
/// Operator and its NicClusterPolicy first).
pub(crate) fn gpu_operator_step(plan: &Plan) -> Step {
    Step {
        path: GPU_VALUES.to_owned(),
        objects: Vec::new(),
        title: gpu::TITLE.to_owned(),
        checks: gpu::checks(plan, GPU_OPERATOR_CHART_CLUSTER_POLICY),
    }
}

/// Kubernetes: what the README says to do before step 1 about the
/// operators, and the commands that do it: add the chart repository and
/// install the Network Operator.
pub(crate) fn kubernetes_prerequisite(plan: &Plan) -> (String, Vec<String>) {
    let sriov = if plan.rdma_mode == RdmaMode::Sriov {
        "; the SR-IOV Network Operator comes with it"
    } else {
        ""
    };
    let text = format!(
        "Install the Network Operator {} in `{}` with Helm from `{NETWORK_VALUES}`: its Node Feature Discovery labels the nodes for both operators (the GPU Operator's is off: one NFD per cluster){sriov}.",
        plan.network_operator_version, plan.network_operator_namespace,
    );
    let commands = vec![
        format!(
            "helm repo add {NVIDIA_HELM_REPOSITORY_NAME} {NVIDIA_HELM_REPOSITORY} && helm repo update"
        ),
        network_operator_install(plan),
    ];
    (text, commands)
}

/// The whereabouts release the rail networks' IPAM is installed from.
/// Neither operator ships it any more: the Network Operator's
/// `NicClusterPolicy` has no whereabouts component (its CRD's
/// `secondaryNetwork` has `cniPlugins`, `multus` and `ipamPlugin`, the last
/// deprecated), and OpenShift's Cluster Network Operator installs it with
/// Multus on OpenShift only.
const WHEREABOUTS_VERSION: &str = "v0.9.4";

/// The manifests of whereabouts' own installation
/// (k8snetworkplumbingwg/whereabouts@3a262bd0, tag v0.9.4, `README.md`,
/// "Installing Whereabouts"), fetched at [`WHEREABOUTS_VERSION`].
const WHEREABOUTS_MANIFESTS: &[&str] = &[
    "doc/crds/daemonset-install.yaml",
    "doc/crds/whereabouts.cni.cncf.io_ippools.yaml",
    "doc/crds/whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml",
    "doc/crds/reconciler-deployment.yaml",
];

/// Kubernetes: the commands that install whereabouts, whose DaemonSet puts
/// the CNI binary on every node, and pin its images to the release: the
/// manifests name `ghcr.io/k8snetworkplumbingwg/whereabouts:latest`.
pub(crate) fn whereabouts_install() -> Vec<String> {
    let files: Vec<String> = WHEREABOUTS_MANIFESTS
        .iter()
        .map(|path| {
            format!(
                "-f https://raw.githubusercontent.com/k8snetworkplumbingwg/whereabouts/{WHEREABOUTS_VERSION}/{path}"
            )
        })
        .collect();
    let image = format!("ghcr.io/k8snetworkplumbingwg/whereabouts:{WHEREABOUTS_VERSION}");
    vec![
        format!("kubectl apply {}", files.join(" ")),
        format!("kubectl -n kube-system set image ds/whereabouts whereabouts={image}"),
        format!(
            "kubectl -n kube-system set image deploy/whereabouts-reconciler whereabouts-reconciler={image}"
        ),
        "kubectl -n kube-system rollout status ds/whereabouts".to_owned(),
    ]
}

/// An operator OLM installs, in its own namespace.
struct Operator<'a> {
    package: &'a OlmPackage,
    namespace: &'a str,
    /// The operator release, for the channel and the starting CSV; `None`
    /// for Red Hat's operators, which follow the cluster's version.
    release: Option<&'a str>,
    /// Extra labels of the namespace.
    labels: Value,
}

fn olm_objects(operator: &Operator<'_>) -> Vec<Value> {
    let ns = operator.namespace;
    let mut namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    if operator.labels.as_object().is_some_and(|l| !l.is_empty()) {
        namespace["metadata"]["labels"] = operator.labels.clone();
    }
    let mut subscription = json!({
        "channel": operator.package.channel_of(operator.release.unwrap_or_default()),
        "installPlanApproval": "Automatic",
        "name": operator.package.package,
        "source": operator.package.catalog,
        "sourceNamespace": OLM_CATALOG_NAMESPACE,
    });
    if let Some(release) = operator.release {
        let bare = release.strip_prefix('v').unwrap_or(release);
        subscription["startingCSV"] = json!(format!("{}.v{bare}", operator.package.package));
    }
    vec![
        namespace,
        json!({
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {"name": ns, "namespace": ns},
            "spec": {"targetNamespaces": [ns]},
        }),
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": operator.package.package, "namespace": ns},
            "spec": subscription,
        }),
    ]
}

/// OpenShift: the operators from OperatorHub's catalogs (Namespace,
/// OperatorGroup, Subscription each, as NVIDIA/cloud-native-docs
/// `openshift/install-gpu-ocp.rst` installs the GPU Operator from the CLI),
/// then the NFD instance, without which no node is labelled and neither
/// NVIDIA operator deploys anything.
pub(crate) fn olm_steps(plan: &Plan) -> Vec<Step> {
    let mut operators = vec![Operator {
        package: &NFD_OLM,
        namespace: OPENSHIFT_NFD_NAMESPACE,
        release: None,
        labels: json!({}),
    }];
    // Shared mode needs no SR-IOV operator.
    if plan.rdma_mode == RdmaMode::Sriov {
        operators.push(Operator {
            package: &SRIOV_OLM,
            namespace: &plan.sriov_namespace,
            release: None,
            labels: json!({}),
        });
    }
    operators.extend([
        Operator {
            package: &NETWORK_OPERATOR_OLM,
            namespace: &plan.network_operator_namespace,
            release: Some(&plan.network_operator_version),
            labels: json!({}),
        },
        Operator {
            package: &GPU_OPERATOR_OLM,
            namespace: &plan.gpu_operator_namespace,
            release: Some(&plan.gpu_operator_version),
            // DCGM's metrics reach the cluster's monitoring
            // (NVIDIA/cloud-native-docs `openshift/install-gpu-ocp.rst`).
            labels: json!({"openshift.io/cluster-monitoring": "true"}),
        },
    ]);
    let mut objects = Vec::new();
    let mut checks = Vec::new();
    for operator in &operators {
        objects.extend(olm_objects(operator));
        checks.push(format!(
            "oc -n {} get csv   # {}: Succeeded",
            quote(operator.namespace),
            operator.package.package
        ));
    }
    let worker_config = format!(
        "sources:\n  pci:\n    deviceClassWhitelist: [{}]\n    deviceLabelFields: [vendor]\n",
        NFD_PCI_DEVICE_CLASSES
            .iter()
            .map(|class| format!("\"{class}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // No operand image: the operator uses its own NFD image, from its CSV
    // (openshift/cluster-nfd-operator
    // `internal/controllers/nodefeaturediscovery_reconciler.go`,
    // `getOperandImage`, `NODE_FEATURE_DISCOVERY_IMAGE`).
    let nfd = json!({
        "apiVersion": "nfd.openshift.io/v1",
        "kind": "NodeFeatureDiscovery",
        "metadata": {"name": "nfd-instance", "namespace": OPENSHIFT_NFD_NAMESPACE},
        "spec": {"workerConfig": {"configData": worker_config}},
    });
    vec![
        Step {
            path: "01-operators.yaml".to_owned(),
            objects,
            title: format!(
                "Operators from OperatorHub: Node Feature Discovery, SR-IOV, the NVIDIA Network Operator {} and GPU Operator {} (OLM)",
                plan.network_operator_version, plan.gpu_operator_version
            ),
            checks,
        },
        Step {
            path: "02-node-feature-discovery.yaml".to_owned(),
            objects: vec![nfd],
            title: "Node Feature Discovery instance: labels the GPU and NIC nodes by PCI vendor"
                .to_owned(),
            checks: vec![
                format!(
                    "oc get nodes -l {}=true   # every gpu node",
                    nfd_pci_vendor_label(&format!("{:04x}", zerohop_known::pci::NVIDIA_VENDOR))
                ),
                format!(
                    "oc get nodes -l {}=true   # every node with a ConnectX",
                    nfd_pci_vendor_label(MELLANOX_VENDOR_HEX)
                ),
            ],
        },
    ]
}
