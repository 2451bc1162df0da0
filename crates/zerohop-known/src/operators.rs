//! Facts about the NVIDIA and SR-IOV operators' deployments that decide
//! what other objects must say.

/// The API group of the GPU Operator's resources, `ClusterPolicy` and
/// `NVIDIADriver` (NVIDIA/gpu-operator `api/nvidia/v1/groupversion_info.go`,
/// `Group: "nvidia.com"`).
pub const GPU_OPERATOR_GROUP: &str = "nvidia.com";

/// The API group of the Network Operator's resources: `NicClusterPolicy`,
/// `HostDeviceNetwork`, `MacvlanNetwork`, `IPoIBNetwork`
/// (Mellanox/network-operator `api/v1alpha1/groupversion_info.go`,
/// `Group: "mellanox.com"`).
pub const NETWORK_OPERATOR_GROUP: &str = "mellanox.com";

/// The API group of the SR-IOV Network Operator's resources
/// (k8snetworkplumbingwg/sriov-network-operator
/// `api/v1/groupversion_info.go`).
pub const SRIOV_GROUP: &str = "sriovnetwork.openshift.io";

/// The API group of `NetworkAttachmentDefinition`
/// (k8snetworkplumbingwg/network-attachment-definition-client
/// `pkg/apis/k8s.cni.cncf.io`).
pub const NETWORK_ATTACHMENT_GROUP: &str = "k8s.cni.cncf.io";

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

/// The Helm repository NVIDIA publishes the GPU and Network Operator
/// charts in (NVIDIA/cloud-native-docs `gpu-operator/getting-started.rst`,
/// `helm repo add nvidia https://helm.ngc.nvidia.com/nvidia`; the same
/// repository in Mellanox/network-operator `deployment/network-operator/README.md`).
pub const NVIDIA_HELM_REPOSITORY: &str = "https://helm.ngc.nvidia.com/nvidia";

/// The local name `helm repo add` gives [`NVIDIA_HELM_REPOSITORY`].
pub const NVIDIA_HELM_REPOSITORY_NAME: &str = "nvidia";

/// One of NVIDIA's operator charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelmChart {
    /// The chart's name in [`NVIDIA_HELM_REPOSITORY`].
    pub chart: &'static str,
    /// The release name the charts' documentation installs it as.
    pub release: &'static str,
    /// Whether the chart's versions carry a leading `v` (`v26.7.0`) as the
    /// operator's releases do: the GPU Operator's do, the Network
    /// Operator's (`26.7.0`, `deployment/network-operator/Chart.yaml`) do not.
    pub v_prefixed_versions: bool,
}

impl HelmChart {
    /// The chart version of operator release `release` (`v26.7.0`), as
    /// `helm install --version` names it.
    pub fn chart_version<'a>(&self, release: &'a str) -> std::borrow::Cow<'a, str> {
        let bare = release.strip_prefix('v').unwrap_or(release);
        if self.v_prefixed_versions {
            format!("v{bare}").into()
        } else {
            bare.into()
        }
    }
}

/// The GPU Operator chart (NVIDIA/gpu-operator `deployments/gpu-operator`).
pub const GPU_OPERATOR_CHART: HelmChart = HelmChart {
    chart: "gpu-operator",
    release: "gpu-operator",
    v_prefixed_versions: true,
};

/// The Network Operator chart (Mellanox/network-operator
/// `deployment/network-operator`).
pub const NETWORK_OPERATOR_CHART: HelmChart = HelmChart {
    chart: "network-operator",
    release: "network-operator",
    v_prefixed_versions: false,
};

/// The name of the ClusterPolicy the GPU Operator chart creates unless
/// `clusterPolicy.deployCR` is false (NVIDIA/gpu-operator
/// `deployments/gpu-operator/templates/clusterpolicy.yaml`,
/// `{{- if .Values.clusterPolicy.deployCR }}` … `name: cluster-policy`).
pub const GPU_OPERATOR_CHART_CLUSTER_POLICY: &str = "cluster-policy";

/// Whether a file's name marks it as Helm values: `values.yaml`, or a base
/// name that starts or ends with `values` next to a `-`, `_` or `.`
/// (`values-prod.yaml`, `gpu-operator-values.yaml`), with a YAML or JSON
/// extension. Helm itself reads any file given to `-f`; this is the naming
/// convention of its own `values.yaml` that charts' documentation and
/// `zerohop plan` follow, so that a linter can tell values from manifests.
pub fn is_helm_values_file(path: &str) -> bool {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let Some((stem, extension)) = base.rsplit_once('.') else {
        return false;
    };
    if !matches!(
        extension.to_ascii_lowercase().as_str(),
        "yaml" | "yml" | "json"
    ) {
        return false;
    }
    let stem = stem.to_ascii_lowercase();
    stem == "values"
        || ["-", "_", "."].iter().any(|sep| {
            stem.starts_with(&format!("values{sep}")) || stem.ends_with(&format!("{sep}values"))
        })
}

/// Top-level values only the GPU Operator chart has
/// (NVIDIA/gpu-operator `deployments/gpu-operator/values.yaml`): a Helm
/// values document with one of them is the GPU Operator's. The Network
/// Operator chart's top-level values (`nfd`, `sriovNetworkOperator`,
/// `operator`, …, `deployment/network-operator/values.yaml`) share none.
const GPU_OPERATOR_VALUES: &[&str] = &[
    "clusterPolicy",
    "driver",
    "toolkit",
    "devicePlugin",
    "dcgm",
    "dcgmExporter",
    "gfd",
    "migManager",
    "nodeStatusExporter",
    "gds",
    "gdrcopy",
    "vgpuManager",
    "vfioManager",
    "sandboxWorkloads",
    "gpuCluster",
    "draDriver",
];

/// Whether a top-level key of a Helm values document marks it as the GPU
/// Operator chart's.
pub fn is_gpu_operator_value(key: &str) -> bool {
    GPU_OPERATOR_VALUES.contains(&key)
}

/// The environment variables the GPU Operator chart sets on the operator's
/// Deployment (`deployments/gpu-operator/templates/operator.yaml`:
/// `DRIVER_MANAGER_IMAGE`, `VALIDATOR_IMAGE`, then `operator.env`): the only
/// operand images a Helm-installed operator knows besides the
/// ClusterPolicy's own.
pub const GPU_OPERATOR_CHART_IMAGE_ENV: &[&str] = &["DRIVER_MANAGER_IMAGE", "VALIDATOR_IMAGE"];

/// A component of the GPU Operator's ClusterPolicy that runs an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterPolicyComponent {
    /// Its key under the ClusterPolicy's `spec`.
    pub key: &'static str,
    /// The operator's environment variable that gives the image when the
    /// ClusterPolicy names none.
    pub env: &'static str,
    /// Whether the component runs when `enabled` is unset.
    pub enabled_by_default: bool,
    /// Whether the operator's OLM bundle (OpenShift) sets `env` on the
    /// operator's Deployment.
    pub in_olm_bundle: bool,
}

/// The ClusterPolicy components and where their images come from. The
/// operator builds an image from the component's `repository`, `image` and
/// `version`; when all are empty it reads `env`, and without it fails with
/// "empty image path provided through both ClusterPolicy CR and ENV"
/// (NVIDIA/gpu-operator `api/nvidia/v1/clusterpolicy_types.go`, `ImagePath`
/// and `imagePath`; the defaults are the components' `IsEnabled`). The OLM
/// bundle sets every one of these variables but `GDS_IMAGE`
/// (`bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml`,
/// the operator container's `env`, v26.7.0).
pub const CLUSTER_POLICY_COMPONENTS: &[ClusterPolicyComponent] = &[
    ClusterPolicyComponent {
        key: "driver",
        env: "DRIVER_IMAGE",
        enabled_by_default: true,
        in_olm_bundle: true,
    },
    ClusterPolicyComponent {
        key: "toolkit",
        env: "CONTAINER_TOOLKIT_IMAGE",
        enabled_by_default: true,
        in_olm_bundle: true,
    },
    ClusterPolicyComponent {
        key: "devicePlugin",
        env: "DEVICE_PLUGIN_IMAGE",
        enabled_by_default: true,
        in_olm_bundle: true,
    },
    ClusterPolicyComponent {
        key: "dcgm",
        env: "DCGM_IMAGE",
        enabled_by_default: true,
        in_olm_bundle: true,
    },
    ClusterPolicyComponent {
        key: "dcgmExporter",
        env: "DCGM_EXPORTER_IMAGE",
        enabled_by_default: true,
        in_olm_bundle: true,
    },
    ClusterPolicyComponent {
        key: "gfd",
        env: "GFD_IMAGE",
        enabled_by_default: true,
        in_olm_bundle: true,
    },
    ClusterPolicyComponent {
        key: "migManager",
        env: "MIG_MANAGER_IMAGE",
        enabled_by_default: true,
        in_olm_bundle: true,
    },
    ClusterPolicyComponent {
        key: "nodeStatusExporter",
        env: "VALIDATOR_IMAGE",
        enabled_by_default: false,
        in_olm_bundle: true,
    },
    ClusterPolicyComponent {
        key: "gds",
        env: "GDS_IMAGE",
        enabled_by_default: false,
        in_olm_bundle: false,
    },
    ClusterPolicyComponent {
        key: "gdrcopy",
        env: "GDRCOPY_IMAGE",
        enabled_by_default: false,
        in_olm_bundle: true,
    },
];

/// A container image as the operators' custom resources split it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperandImage {
    /// Registry and path (`nvcr.io/nvidia/cloud-native`).
    pub repository: &'static str,
    /// Image name (`nvidia-fs`).
    pub image: &'static str,
    /// Tag.
    pub version: &'static str,
}

/// The GPUDirect Storage driver image of GPU Operator v26.7.0's chart
/// (`deployments/gpu-operator/values.yaml`, `gds:`). A ClusterPolicy that
/// enables GDS must name it where no chart does: the OLM bundle has no
/// `GDS_IMAGE` ([`CLUSTER_POLICY_COMPONENTS`]).
pub const GDS_DRIVER_IMAGE: OperandImage = OperandImage {
    repository: "nvcr.io/nvidia/cloud-native",
    image: "nvidia-fs",
    version: "2.29.4",
};

/// An operator as OpenShift's Operator Lifecycle Manager installs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OlmPackage {
    /// The package name in the catalog (the bundle's
    /// `operators.operatorframework.io.bundle.package.v1`).
    pub package: &'static str,
    /// The catalog source that carries it.
    pub catalog: &'static str,
    /// The update channel; `None` where it is one per release
    /// (`v26.7`, [`OlmPackage::channel_of`]).
    pub channel: Option<&'static str>,
}

impl OlmPackage {
    /// The channel to subscribe to for operator release `release`
    /// (`v26.7.0` → `v26.7`), or the fixed channel.
    pub fn channel_of(&self, release: &str) -> String {
        if let Some(channel) = self.channel {
            return channel.to_owned();
        }
        let bare = release.strip_prefix('v').unwrap_or(release);
        let minor: Vec<&str> = bare.splitn(3, '.').take(2).collect();
        format!("v{}", minor.join("."))
    }
}

/// The namespace of OpenShift's catalog sources.
pub const OLM_CATALOG_NAMESPACE: &str = "openshift-marketplace";

/// Node Feature Discovery, Red Hat's build (openshift/cluster-nfd-operator
/// `manifests/stable/metadata/annotations.yaml`: package `nfd`, channel
/// `stable`), from the `redhat-operators` catalog.
pub const NFD_OLM: OlmPackage = OlmPackage {
    package: "nfd",
    catalog: "redhat-operators",
    channel: Some("stable"),
};

/// The namespace Red Hat's NFD operator suggests and its documentation
/// uses (`operatorframework.io/suggested-namespace: openshift-nfd`).
pub const OPENSHIFT_NFD_NAMESPACE: &str = "openshift-nfd";

/// The SR-IOV Network Operator, Red Hat's build, from `redhat-operators`,
/// channel `stable` (openshift/openshift-docs
/// `modules/nw-sriov-installing-operator.adoc`, the CLI's `Subscription`).
pub const SRIOV_OLM: OlmPackage = OlmPackage {
    package: "sriov-network-operator",
    catalog: "redhat-operators",
    channel: Some("stable"),
};

/// The GPU Operator from the `certified-operators` catalog, one channel per
/// release (NVIDIA/gpu-operator `bundle/metadata/annotations.yaml`: package
/// `gpu-operator-certified`, channels `stable,v26.7`; NVIDIA/cloud-native-docs
/// `openshift/install-gpu-ocp.rst`).
pub const GPU_OPERATOR_OLM: OlmPackage = OlmPackage {
    package: "gpu-operator-certified",
    catalog: "certified-operators",
    channel: None,
};

/// The Network Operator from the `certified-operators` catalog, one
/// channel per release (Mellanox/network-operator
/// `bundle/metadata/annotations.yaml`: package `nvidia-network-operator`,
/// channels `stable,v26.7`).
pub const NETWORK_OPERATOR_OLM: OlmPackage = OlmPackage {
    package: "nvidia-network-operator",
    catalog: "certified-operators",
    channel: None,
};

/// The PCI device classes whose devices Node Feature Discovery labels by
/// vendor for the data path: network (`02`, `0200` Ethernet, `0207`
/// InfiniBand) and display (`0300`, `0302`), giving
/// [`nfd_pci_vendor_label`] for `15b3` and `10de`. The GPU Operator's chart
/// configures its NFD with these (`deployments/gpu-operator/values.yaml`,
/// `node-feature-discovery.worker.config.sources.pci`).
pub const NFD_PCI_DEVICE_CLASSES: &[&str] = &["02", "0200", "0207", "0300", "0302"];

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

    #[test]
    fn helm_values_files_are_told_by_name() {
        assert!(is_helm_values_file("values.yaml"));
        assert!(is_helm_values_file("plan/helm/gpu-operator-values.yaml"));
        assert!(is_helm_values_file("Values-prod.YML"));
        assert!(!is_helm_values_file("values"));
        assert!(!is_helm_values_file("evalues.yaml"));
        assert!(!is_helm_values_file("50-gpu-cluster-policy.yaml"));
    }

    #[test]
    fn chart_versions_and_channels_follow_the_release() {
        assert_eq!(GPU_OPERATOR_CHART.chart_version("v26.7.0"), "v26.7.0");
        assert_eq!(NETWORK_OPERATOR_CHART.chart_version("v26.7.0"), "26.7.0");
        assert_eq!(GPU_OPERATOR_OLM.channel_of("v26.7.0"), "v26.7");
        assert_eq!(NETWORK_OPERATOR_OLM.channel_of("26.7.1"), "v26.7");
        assert_eq!(NFD_OLM.channel_of("v26.7.0"), "stable");
    }
}
