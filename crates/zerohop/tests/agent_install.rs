//! The install and removal options of `zerohop agent`: `--print-manifests`
//! with the alerts, monitor labels and without the kernel log, what it
//! refuses, `--uninstall` without a cluster to reach, and an agent asked
//! to write to a cluster without knowing its node.

use std::process::Command;

fn zerohop() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
}

fn documents(text: &str) -> Vec<serde_json::Value> {
    text.split("\n---\n")
        .skip(1)
        .map(|doc| serde_saphyr::from_str(doc).expect("YAML"))
        .collect()
}

#[test]
fn print_manifests_with_alerts_labels_and_no_kernel_log() {
    let out = zerohop()
        .args([
            "agent",
            "--print-manifests",
            "--monitor",
            "service-monitor",
            "--monitor",
            "prometheus-rule",
            "--monitor-label",
            "release=kube-prometheus-stack",
            "--no-kernel-log",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let objects = documents(&String::from_utf8(out.stdout).unwrap());
    let of = |kind: &str| {
        objects
            .iter()
            .find(|o| o["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
    };
    for kind in ["ServiceMonitor", "PrometheusRule"] {
        assert_eq!(
            of(kind)["metadata"]["labels"]["release"],
            "kube-prometheus-stack"
        );
    }
    of("ValidatingAdmissionPolicy");
    let container = &of("DaemonSet")["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["securityContext"]["privileged"], false);
}

#[test]
fn print_manifests_refuses_a_malformed_label() {
    for (label, named) in [
        ("release", "release"),
        ("bad key=x", "bad key"),
        ("release=not a value", "not a value"),
    ] {
        let out = zerohop()
            .args(["agent", "--print-manifests", "--monitor-label", label])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{label}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named), "{stderr}");
    }
}

#[test]
fn uninstall_without_a_cluster_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = zerohop()
        .args(["agent", "--uninstall", "--kubeconfig"])
        .arg(dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kubeconfig"), "{stderr}");
    let both = zerohop()
        .args(["agent", "--uninstall", "--print-manifests"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn without_a_node_name_the_kubernetes_outputs_refuse_to_start() {
    let out = zerohop()
        .args(["agent", "--node-condition", "--listen", "127.0.0.1:0"])
        .env_remove("NODE_NAME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NODE_NAME"), "{stderr}");
}

#[test]
fn print_manifests_renders_the_deployment() {
    let out = zerohop()
        .args(["agent", "--print-manifests", "--monitor", "pod-monitor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for kind in [
        "kind: Namespace",
        "kind: CustomResourceDefinition",
        "kind: ServiceAccount",
        "kind: ClusterRole",
        "kind: DaemonSet",
        "kind: PodMonitor",
    ] {
        assert!(text.contains(kind), "{kind} missing");
    }
    assert!(!text.contains("kind: ServiceMonitor"));
}
