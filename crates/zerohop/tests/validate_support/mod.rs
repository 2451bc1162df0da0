//! What the tests of `validate run` share, against the real server
//! (`validate_run_real.rs`) and the in-memory one (`validate_run.rs`): one
//! intent, rendered by the real `zerohop plan`, so that both judge the same
//! objects.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Two rails and eight GPUs per node.
const INTENT: &str = "apiVersion: zerohop.dev/v1alpha1
kind: DataPathPlan
metadata:
  name: two-rails
spec:
  platform: kubernetes
  nodePools:
    - name: h100
      nodeSelector:
        feature.node.kubernetes.io/pci-10de.present: \"true\"
      cpuVendor: intel
      gpus: 8
      nics:
      - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: \"1021\", linkType: ETH, vfs: 8, rail: 0, subnet: 192.168.100.0/24}
      - {pf: ens2f0np0, rdmaDevice: mlx5_1, deviceId: \"1021\", linkType: ETH, vfs: 8, rail: 1, subnet: 192.168.101.0/24}
  workload:
    name: trainer
    namespace: ai
    image: nvcr.io/nvidia/pytorch:25.08-py3
    gpusPerPod: 8
";

/// Renders [`INTENT`] with `zerohop plan` into `dir/plan`, and returns it.
pub fn render_plan(dir: &Path) -> PathBuf {
    let intent = dir.join("intent.yaml");
    std::fs::write(&intent, INTENT).unwrap();
    let plan = dir.join("plan");
    let out = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .arg("plan")
        .arg(&intent)
        .arg("-o")
        .arg(&plan)
        .output()
        .unwrap();
    // The intent is valid: plan renders it.
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    plan
}
