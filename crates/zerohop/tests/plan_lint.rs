//! What `zerohop plan` renders, `zerohop lint` must find nothing wrong with:
//! both examples, both platforms, against the operators' real CRDs.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn rendered_plans_lint_clean() {
    let Some(crds) = zerohop_testkit::shared_data::shared_dir("reference/crds") else {
        return;
    };
    for example in ["examples/cluster.yaml", "examples/infiniband.yaml"] {
        for platform in ["kubernetes", "openshift"] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("plan");
            let plan = Command::new(env!("CARGO_BIN_EXE_zerohop"))
                .arg("plan")
                .arg(repo().join(example))
                .args(["--platform", platform, "-o"])
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                plan.status.success(),
                "{example} {platform}: {}",
                String::from_utf8_lossy(&plan.stderr)
            );
            // On Kubernetes the kubelet settings are a host file, which a
            // directory search skips (not *.yaml): name it, so that the
            // Topology Manager rules see the policy the pods run under.
            let drop_ins: Vec<PathBuf> = std::fs::read_dir(out.join("host"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|pool| {
                    pool.path()
                        .join("etc/kubernetes/kubelet.conf.d/50-zerohop-topology.conf")
                })
                .collect();
            assert_eq!(
                drop_ins.is_empty(),
                platform == "openshift",
                "{example} {platform}: the kubelet drop-in is a kubernetes host file"
            );
            let lint = Command::new(env!("CARGO_BIN_EXE_zerohop"))
                .arg("lint")
                .arg(&out)
                .args(&drop_ins)
                .arg("--crds")
                .arg(&crds)
                .args(["--format", "json"])
                .output()
                .unwrap();
            let report: serde_json::Value = serde_json::from_slice(&lint.stdout).unwrap();
            let problems: Vec<&serde_json::Value> = report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| matches!(f["status"].as_str(), Some("fail" | "warn")))
                .collect();
            assert!(
                problems.is_empty(),
                "{example} on {platform}: lint found {problems:#?}"
            );
            assert_eq!(lint.status.code(), Some(0));
            // ZL090 had a pod to judge: the example pod carries its layout
            // and the set configures an enforcing Topology Manager policy.
            let pod = std::fs::read_to_string(out.join("90-workload-pod.yaml")).unwrap();
            assert!(
                pod.contains(zerohop_known::topology::LAYOUT_ANNOTATION),
                "{example} {platform}"
            );
            let kubelet = if platform == "openshift" {
                std::fs::read_to_string(out.join("11-kubeletconfig-topology.yaml")).unwrap()
            } else {
                std::fs::read_to_string(&drop_ins[0]).unwrap()
            };
            assert!(
                kubelet.contains("topologyManagerPolicy: best-effort")
                    || kubelet.contains("topologyManagerPolicy: single-numa-node"),
                "{example} {platform}: {kubelet}"
            );
        }
    }
}

/// The plan's old kubelet settings (`single-numa-node`, whatever the
/// layout) with the 8-GPU example pod: ZL090 reports what issue #14 saw,
/// a pod the kubelet refuses with `TopologyAffinityError`.
#[test]
fn the_old_single_numa_node_policy_is_caught_on_the_rendered_pod() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan");
    let plan = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .arg("plan")
        .arg(repo().join("examples/cluster.yaml"))
        .args(["--platform", "kubernetes", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(plan.status.success());
    let drop_in = out.join("host/h100/etc/kubernetes/kubelet.conf.d/50-zerohop-topology.conf");
    let settings = std::fs::read_to_string(&drop_in).unwrap();
    let old = settings.replace(
        "topologyManagerPolicy: best-effort",
        "topologyManagerPolicy: single-numa-node",
    );
    assert_ne!(old, settings);
    let old_path = dir.path().join("old-kubelet.yaml");
    std::fs::write(&old_path, old).unwrap();
    let lint = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .arg("lint")
        .arg(out.join("90-workload-pod.yaml"))
        .arg(&old_path)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&lint.stdout).unwrap();
    let refused = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "ZL090" && f["status"] == "fail");
    assert!(refused, "{report:#}");
}

/// ZL065 reads the lossless priority from the QoS script the OpenShift set
/// carries in its storage MachineConfig (a base64 data URL): a pod moved to
/// traffic class 74 (DSCP 18, priority 2) is off the priority that script
/// enables PFC for, and the finding names the MachineConfig. The policies
/// say the rails are RoCE.
#[test]
fn a_pod_off_the_rendered_lossless_priority_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan");
    let plan = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .arg("plan")
        .arg(repo().join("examples/cluster.yaml"))
        .args(["--platform", "openshift", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(plan.status.success());
    let pod = std::fs::read_to_string(out.join("90-workload-pod.yaml")).unwrap();
    let moved = pod.replace("value: \"106\"", "value: \"74\"");
    assert_ne!(moved, pod, "the rendered pod sets NCCL_IB_TC 106: {pod}");
    let moved_path = dir.path().join("pod.yaml");
    std::fs::write(&moved_path, moved).unwrap();
    let lint = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .arg("lint")
        .arg(&moved_path)
        .arg(out.join("32-sriov-network-node-policies.yaml"))
        .arg(out.join("12-machineconfig-storage-fabric.yaml"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&lint.stdout).unwrap();
    let off = report["findings"].as_array().unwrap().iter().any(|f| {
        f["id"] == "ZL065"
            && f["message"]
                .as_str()
                .is_some_and(|m| m.contains("MachineConfig") && m.contains("priority 3 only"))
    });
    assert!(off, "{report:#}");
}
