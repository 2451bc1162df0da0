//! GPU Operator `ClusterPolicy`.

use serde_json::json;
use zerohop_known::shell::quote;

use super::Step;
use crate::intent::Platform;
use crate::plan::Plan;

/// The GPU Operator singleton, with the open kernel modules (needed for
/// DMA-BUF and for GDS ≥ 2.17.5), GPUDirect RDMA through the Network
/// Operator's DOCA driver, GDS and GDRCopy.
pub(crate) fn cluster_policy_step(plan: &Plan) -> Step {
    let openshift = plan.platform == Platform::Openshift;
    let policy = json!({
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "gpu-cluster-policy"},
        "spec": {
            "operator": {"runtimeClass": "nvidia", "use_ocp_driver_toolkit": openshift},
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
        },
    });
    let ns = quote(&plan.gpu_operator_namespace);
    let mut checks = vec![
        "kubectl get clusterpolicy gpu-cluster-policy -o jsonpath='{.status.state}'   # ready"
            .to_owned(),
        format!(
            "kubectl -n {ns} exec ds/nvidia-driver-daemonset -c nvidia-driver-ctr -- nvidia-smi topo -m   # GPU-NIC pairs at PIX/PXB"
        ),
        format!(
            "kubectl -n {ns} logs ds/nvidia-driver-daemonset -c nvidia-peermem-ctr | tail -n 3   # peermem loaded; or: lsmod | grep nvidia_peermem"
        ),
    ];
    if plan.gds {
        checks.push(format!("kubectl -n {ns} exec ds/nvidia-driver-daemonset -c nvidia-fs-ctr -- cat /proc/driver/nvidia-fs/stats   # nvidia-fs loaded"));
    }
    Step {
        path: "50-gpu-cluster-policy.yaml".to_owned(),
        objects: vec![policy],
        title: "GPU Operator: open kernel modules, GPUDirect RDMA, GDS, GDRCopy (after the DOCA driver is ready)".to_owned(),
        checks,
    }
}
