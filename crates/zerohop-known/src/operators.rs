//! Facts about the NVIDIA and SR-IOV operators' deployments that decide
//! what other objects must say.

/// The namespace of the SR-IOV Network Operator that OpenShift installs
/// from OperatorHub (Red Hat's build; its policies must live there).
pub const OPENSHIFT_SRIOV_NAMESPACE: &str = "openshift-sriov-network-operator";

/// The prefix of the resources that OpenShift's SR-IOV Network Operator
/// advertises: `openshift.io/<resourceName>`. The operator builds the name
/// from its `RESOURCE_PREFIX` environment variable
/// (k8snetworkplumbingwg/sriov-network-operator `api/v1/helper.go`,
/// `os.Getenv("RESOURCE_PREFIX") + "/" + cr.Spec.ResourceName`), which its
/// chart sets from `resourcePrefix`, `openshift.io` by default
/// (`deployment/sriov-network-operator-chart/values.yaml`); on OpenShift
/// "the resource prefix in this case will be `openshift.io`"
/// (Mellanox/network-operator-docs
/// `docs/openshift/deployment-guide-openshift.rst`).
pub const OPENSHIFT_SRIOV_RESOURCE_PREFIX: &str = "openshift.io";

/// The prefix the SR-IOV Network Operator bundled with the Network Operator
/// Helm chart uses, `sriov-network-operator.operator.resourcePrefix`
/// (Mellanox/network-operator `deployment/network-operator/values.yaml`).
pub const NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX: &str = "nvidia.com";

/// The environment variable of the SR-IOV Network Operator's Deployment
/// that holds the resource prefix.
pub const SRIOV_RESOURCE_PREFIX_ENV: &str = "RESOURCE_PREFIX";

/// The file the containerised DOCA driver creates on the host once its
/// modules are loaded, and removes while it reloads them
/// (Mellanox/doca-driver-build `entrypoint/internal/config/config.go`,
/// `DriverReadyPath`, default `/run/mellanox/drivers/.driver-ready`).
pub const DOCA_DRIVER_READY_FILE: &str = "/run/mellanox/drivers/.driver-ready";

/// Whether the node label `key` is one that GPU Feature Discovery sets
/// (`nvidia.com/gpu.product`, `nvidia.com/cuda.driver.major`, …; the
/// "Generated Labels" of NVIDIA/k8s-device-plugin
/// `docs/gpu-feature-discovery/README.md`). GFD is a component of the GPU
/// Operator's `ClusterPolicy` that starts only once the GPU driver is up,
/// which, with GPUDirect RDMA, waits for the NIC driver: a selector on such
/// a label matches no node while the network is being set up.
/// `nvidia.com/gpu.present` and `nvidia.com/gpu.deploy.*` are set by the GPU
/// Operator itself from the NFD labels as soon as it runs, and are not
/// counted.
pub fn is_gpu_feature_discovery_label(key: &str) -> bool {
    const SET_BY_GFD: &[&str] = &[
        "gpu.product",
        "gpu.count",
        "gpu.memory",
        "gpu.family",
        "gpu.machine",
        "gpu.compute.",
        "gpu.replicas",
        "gpu.sharing-strategy",
        "gpu.mode",
        "gpu.clique",
        "cuda.",
        "gfd.",
        "mig.capable",
        "mig.strategy",
        "mps.capable",
        "vgpu.",
    ];
    key.strip_prefix("nvidia.com/")
        .is_some_and(|name| SET_BY_GFD.iter().any(|set| name.starts_with(set)))
}

/// The Node Feature Discovery label of nodes with a PCI device of `vendor`
/// (hexadecimal, `10de` for NVIDIA GPUs, `15b3` for NVIDIA networking):
/// NFD's PCI source labels by vendor for the device classes it is told to
/// (kubernetes-sigs/node-feature-discovery `docs/reference/feature-labels.md`,
/// `pci-<device label>.present`; the GPU and Network Operators configure
/// classes 0300/0302 and 0200/0207 with `deviceLabelFields: [vendor]`).
pub fn nfd_pci_vendor_label(vendor: &str) -> String {
    format!("feature.node.kubernetes.io/pci-{vendor}.present")
}

/// The Node Feature Discovery label of nodes with a PCI device of `class`
/// (four hexadecimal digits, class and subclass: `0302`) and `vendor`:
/// NFD's default `deviceLabelFields` are `[class, vendor]`
/// (kubernetes-sigs/node-feature-discovery `docs/reference/feature-labels.md`,
/// "PCI": `pci-<device label>.present`, and
/// `docs/reference/worker-configuration-reference.md`,
/// `sources.pci.deviceLabelFields`).
pub fn nfd_pci_class_vendor_label(class: &str, vendor: &str) -> String {
    nfd_pci_vendor_label(&format!("{class}_{vendor}"))
}

/// A value of an operator's Helm chart that users write into the custom
/// resource, where it is no field: the chart reads it, the operator never
/// sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChartOnlyValue {
    /// The custom resource's kind (`ClusterPolicy`, `NicClusterPolicy`).
    pub kind: &'static str,
    /// The key under the resource's `spec`, as the chart's values spell it.
    pub key: &'static str,
    /// The chart, as `helm install` names it.
    pub chart: &'static str,
    /// What the value does in the chart, as a fragment.
    pub does: &'static str,
}

/// The top-level values of the GPU Operator chart
/// (NVIDIA/gpu-operator `deployments/gpu-operator/values.yaml`) that are
/// not fields of the ClusterPolicy's `spec`
/// (`deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml`), and
/// those of the Network Operator chart (Mellanox/network-operator
/// `deployment/network-operator/values.yaml`) that are not fields of the
/// NicClusterPolicy's `spec`.
const CHART_ONLY_VALUES: &[ChartOnlyValue] = &[
    ChartOnlyValue {
        kind: "ClusterPolicy",
        key: "nfd",
        chart: "gpu-operator",
        does: "deploys node feature discovery with the chart (`nfd.enabled`)",
    },
    ChartOnlyValue {
        kind: "ClusterPolicy",
        key: "node-feature-discovery",
        chart: "gpu-operator",
        does: "configures the node feature discovery subchart",
    },
    ChartOnlyValue {
        kind: "ClusterPolicy",
        key: "platform",
        chart: "gpu-operator",
        does: "tells the chart it installs on OpenShift (`platform.openshift`)",
    },
    ChartOnlyValue {
        kind: "ClusterPolicy",
        key: "clusterPolicy",
        chart: "gpu-operator",
        does: "decides whether the chart creates its ClusterPolicy (`clusterPolicy.deployCR`)",
    },
    ChartOnlyValue {
        kind: "ClusterPolicy",
        key: "gpuCluster",
        chart: "gpu-operator",
        does: "decides whether the chart creates a GPUCluster (`gpuCluster.deployCR`)",
    },
    ChartOnlyValue {
        kind: "ClusterPolicy",
        key: "draDriver",
        chart: "gpu-operator",
        does: "configures the DRA driver of a GPUCluster",
    },
    ChartOnlyValue {
        kind: "NicClusterPolicy",
        key: "nfd",
        chart: "network-operator",
        does: "deploys node feature discovery with the chart (`nfd.enabled`)",
    },
    ChartOnlyValue {
        kind: "NicClusterPolicy",
        key: "node-feature-discovery",
        chart: "network-operator",
        does: "configures the node feature discovery subchart",
    },
    ChartOnlyValue {
        kind: "NicClusterPolicy",
        key: "sriovNetworkOperator",
        chart: "network-operator",
        does: "deploys the SR-IOV Network Operator with the chart (`sriovNetworkOperator.enabled`)",
    },
    ChartOnlyValue {
        kind: "NicClusterPolicy",
        key: "maintenanceOperator",
        chart: "network-operator",
        does: "deploys the maintenance operator with the chart (`maintenanceOperator.enabled`)",
    },
];

/// The chart value `key` is, when a `kind` resource's `spec` sets it and
/// has no such field.
pub fn chart_only_value(kind: &str, key: &str) -> Option<&'static ChartOnlyValue> {
    CHART_ONLY_VALUES
        .iter()
        .find(|value| value.kind == kind && value.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfd_labels_are_told_apart_from_operator_labels() {
        assert!(is_gpu_feature_discovery_label("nvidia.com/gpu.product"));
        assert!(is_gpu_feature_discovery_label(
            "nvidia.com/cuda.driver.major"
        ));
        assert!(!is_gpu_feature_discovery_label("nvidia.com/gpu.present"));
        assert!(!is_gpu_feature_discovery_label(
            "nvidia.com/gpu.deploy.driver"
        ));
        assert!(!is_gpu_feature_discovery_label(
            "feature.node.kubernetes.io/pci-10de.present"
        ));
        assert_eq!(
            chart_only_value("ClusterPolicy", "nfd").map(|v| v.chart),
            Some("gpu-operator")
        );
        // `gfd` is a ClusterPolicy field as well as a chart value.
        assert_eq!(chart_only_value("ClusterPolicy", "gfd"), None);
        assert_eq!(
            nfd_pci_vendor_label("15b3"),
            "feature.node.kubernetes.io/pci-15b3.present"
        );
    }
}
