//! The GPU Operator's settings: chart values on Kubernetes
//! (`render::install`), a complete `ClusterPolicy` on OpenShift.

use serde_json::{Value, json};
use zerohop_known::operators::GDS_DRIVER_IMAGE;
use zerohop_known::shell::quote;

use super::Step;
use crate::plan::Plan;

/// The name of the ClusterPolicy this plan renders on OpenShift.
const CLUSTER_POLICY: &str = "gpu-cluster-policy";

/// The open kernel modules (needed for DMA-BUF and for GDS ≥ 2.17.5),
/// GPUDirect RDMA through the Network Operator's DOCA driver, GDS and
/// GDRCopy. The keys are the ClusterPolicy's `spec` fields and, spelled
/// the same, the GPU Operator chart's values, from which the chart renders
/// its ClusterPolicy (NVIDIA/gpu-operator
/// `deployments/gpu-operator/templates/clusterpolicy.yaml`).
pub(crate) fn settings(plan: &Plan) -> Value {
    json!({
        "operator": {"runtimeClass": "nvidia"},
        "daemonsets": {"updateStrategy": "RollingUpdate", "priorityClassName": "system-node-critical"},
        "driver": {
            "enabled": true,
            "kernelModuleType": "open",
            // The Network Operator owns the NIC driver: peermem waits for
            // its DOCA driver instead of a host MOFED.
            "rdma": {"enabled": true, "useHostMofed": false},
            "upgradePolicy": {"autoUpgrade": true, "maxParallelUpgrades": 1, "drain": {"enable": false}},
        },
        "toolkit": {"enabled": true},
        "devicePlugin": {"enabled": true},
        "dcgm": {"enabled": true},
        "dcgmExporter": {"enabled": true},
        "gfd": {"enabled": true},
        "nodeStatusExporter": {"enabled": true},
        "migManager": {"enabled": false},
        "mig": {"strategy": "single"},
        "gds": {"enabled": plan.gds},
        "gdrcopy": {"enabled": true},
        "validator": {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}},
    })
}

/// The checks after the GPU Operator's stack is up, for the ClusterPolicy
/// named `policy`.
pub(crate) fn checks(plan: &Plan, policy: &str) -> Vec<String> {
    let ns = quote(&plan.gpu_operator_namespace);
    let pod = driver_pod(&ns);
    let mut checks = vec![
        format!("kubectl get clusterpolicy {policy} -o jsonpath='{{.status.state}}'   # ready"),
        format!(
            "kubectl -n {ns} exec {pod} -c nvidia-driver-ctr -- nvidia-smi topo -m   # GPU-NIC pairs at PIX/PXB"
        ),
        format!(
            "kubectl -n {ns} logs {pod} -c nvidia-peermem-ctr | tail -n 3   # peermem loaded; or: lsmod | grep nvidia_peermem"
        ),
    ];
    if plan.gds {
        checks.push(format!("kubectl -n {ns} exec {pod} -c nvidia-fs-ctr -- cat /proc/driver/nvidia-fs/stats   # nvidia-fs loaded"));
    }
    checks
}

/// The label every GPU driver pod carries, whatever its DaemonSet is
/// called: with OpenShift's Driver Toolkit the DaemonSet's name ends in the
/// RHCOS version (NVIDIA/gpu-operator@0559da86
/// `manifests/state-driver/0500_daemonset.yaml`: `name: {{ .Driver.AppName }}`,
/// `app.kubernetes.io/component: "nvidia-driver"`), so `ds/<name>` names no
/// object there.
const DRIVER_POD_LABEL: &str = "app.kubernetes.io/component=nvidia-driver";

/// A shell word that names the GPU driver pod on the node `$NODE`, found by
/// [`DRIVER_POD_LABEL`].
fn driver_pod(ns: &str) -> String {
    format!(
        "\"$(kubectl -n {ns} get pods -l {DRIVER_POD_LABEL} --field-selector spec.nodeName={} -o name)\"",
        super::NODE
    )
}

/// The title of the GPU Operator's step.
pub(crate) const TITLE: &str = "GPU Operator: open kernel modules, GPUDirect RDMA, GDS, GDRCopy (after the DOCA driver is ready)";

/// OpenShift: the one ClusterPolicy, complete. OLM creates none, and the
/// operator it installs takes the images the policy leaves out from its
/// CSV's environment, which has every one but GDS's
/// (`zerohop_known::operators::CLUSTER_POLICY_COMPONENTS`): the GDS driver's
/// image is named here.
pub(crate) fn cluster_policy_step(plan: &Plan) -> Step {
    let mut spec = settings(plan);
    spec["operator"]["use_ocp_driver_toolkit"] = json!(true);
    if plan.gds {
        spec["gds"]["repository"] = json!(GDS_DRIVER_IMAGE.repository);
        spec["gds"]["image"] = json!(GDS_DRIVER_IMAGE.image);
        spec["gds"]["version"] = json!(GDS_DRIVER_IMAGE.version);
    }
    let policy = json!({
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": CLUSTER_POLICY},
        "spec": spec,
    });
    Step {
        path: "50-gpu-cluster-policy.yaml".to_owned(),
        objects: vec![policy],
        title: TITLE.to_owned(),
        checks: checks(plan, CLUSTER_POLICY),
    }
}
