//! The real `zerohop agent` against the real kube-apiserver and etcd
//! (`tools/control-plane`), installed from its own manifests and running
//! under its own identity: the `zerohop-agent` service account, with a
//! token from the TokenRequest API bound to a Pod on its node, as the
//! kubelet obtains one. What the fake server cannot tell is judged here by
//! the server itself: the status subresource, strategic-merge list
//! semantics, structural-schema pruning, RBAC, and the admission policy's
//! CEL over `request.userInfo`.

#![cfg(feature = "cluster")]

mod agent_support;

use std::time::Duration;

use agent_support::{Agent, copy_tree, fixture, wait_until, zerohop};
use serde_json::{Value, json};
use zerohop_known::zerohop_api::{AGENT_NAME as ACCOUNT, API_VERSION, CONDITION_TYPE as CONDITION, KIND};
use zerohop_testkit::control_plane::ControlPlane;

/// The namespace `--print-manifests` installs the agent in by default.
const NAMESPACE: &str = "zerohop-system";

/// `zerohop agent --print-manifests`, applied as an administrator would.
fn install(plane: &ControlPlane) {
    let out = zerohop()
        .args(["agent", "--print-manifests"])
        .output()
        .unwrap();
    assert!(out.status.success());
    plane.apply(std::str::from_utf8(&out.stdout).unwrap());
    plane.kubectl_ok(
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/datapathreports.zerohop.dev",
        ],
        None,
    );
}

/// The kubelet's Ready condition, as its heartbeat writes it.
fn kubelet_ready(heartbeat: &str) -> Value {
    json!({ "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": heartbeat, "lastTransitionTime": "2026-01-01T00:00:00Z" })
}

/// A Node named `name` with the kubelet's Ready condition.
fn create_node(plane: &ControlPlane, name: &str) {
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "labels": { "nvidia.com/gpu.present": "true" } },
    });
    plane.kubectl_ok(&["create", "-f", "-"], Some(&node.to_string()));
    kubelet_heartbeat(plane, name, "2026-01-01T00:00:00Z");
}

/// What the kubelet sends every 10 s: a strategic merge patch of
/// `nodes/NAME/status` naming its own conditions only
/// (pkg/kubelet/kubelet_node_status.go, `PatchNodeStatus`).
fn kubelet_heartbeat(plane: &ControlPlane, name: &str, heartbeat: &str) {
    let patch = json!({ "status": { "conditions": [kubelet_ready(heartbeat)] } });
    plane.kubectl_ok(
        &[
            "patch",
            "node",
            name,
            "--subresource=status",
            "--type=strategic",
            "-p",
            &patch.to_string(),
        ],
        None,
    );
}

/// The agent's Pod on `node`, as the DaemonSet controller and the
/// scheduler would leave it (neither runs here), and a kubeconfig with the
/// token the kubelet would get for it.
fn agent_identity(plane: &ControlPlane, node: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let pod = format!("zerohop-agent-{node}");
    let object = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": pod, "namespace": NAMESPACE },
        "spec": {
            "serviceAccountName": ACCOUNT,
            "nodeName": node,
            "containers": [{ "name": "agent", "image": "zerohop:test" }],
        },
    });
    plane.kubectl_ok(&["create", "-f", "-"], Some(&object.to_string()));
    let token = plane.pod_token(NAMESPACE, ACCOUNT, &pod);
    plane.write_token_kubeconfig(&token, &dir.join(format!("{node}.kubeconfig")))
}

fn conditions(plane: &ControlPlane, node: &str) -> Vec<Value> {
    plane
        .get_json(&["node", node])
        .and_then(|n| n["status"]["conditions"].as_array().cloned())
        .unwrap_or_default()
}

fn ours(plane: &ControlPlane, node: &str) -> Option<Value> {
    conditions(plane, node)
        .into_iter()
        .find(|c| c["type"] == CONDITION)
}

fn agent_args<'a>(root: &'a str, kubeconfig: &'a str) -> Vec<&'a str> {
    vec![
        "--root",
        root,
        "--interval",
        "1s",
        "--node-condition",
        "--report-object",
        "--kubeconfig",
        kubeconfig,
    ]
}

#[test]
fn the_agent_under_its_own_identity_writes_its_node_and_report_and_the_kubelet_keeps_its_own() {
    let Some(plane) = ControlPlane::shared() else {
        return;
    };
    install(plane);
    let node = plane.unique_name("gpu");
    create_node(plane, &node);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = agent_identity(plane, &node, dir.path());
    let root = dir.path().join("host");
    // NFS mounted over TCP where RDMA was asked for: a failing data path,
    // so that the condition, the report and an event all have something
    // to say.
    copy_tree(&fixture("NFS001/fail-rdma-option-tcp-transports"), &root);
    let agent = Agent::start(
        &agent_args(root.to_str().unwrap(), kubeconfig.to_str().unwrap()),
        &[("NODE_NAME", &node)],
    );

    // The condition, written through the status subresource by
    // server-side apply, beside the kubelet's.
    assert!(
        wait_until(Duration::from_secs(30), || ours(plane, &node).is_some()),
        "no condition: {}",
        agent.log()
    );
    let condition = ours(plane, &node).unwrap();
    assert_eq!(condition["status"], "False", "{condition}");
    assert_eq!(condition["reason"], "NfsNotRdma", "{condition}");
    assert_eq!(conditions(plane, &node).len(), 2);

    // The kubelet's next heartbeat, a strategic merge patch of its own
    // conditions: ours survives it, and the heartbeat is taken.
    kubelet_heartbeat(plane, &node, "2026-01-01T00:00:10Z");
    let after = conditions(plane, &node);
    let ready = after.iter().find(|c| c["type"] == "Ready").unwrap();
    assert_eq!(ready["lastHeartbeatTime"], "2026-01-01T00:00:10Z");
    assert!(
        after.iter().any(|c| c["type"] == CONDITION),
        "the kubelet's patch removed ours: {after:?}"
    );

    // The report object, stored as the agent wrote it: what it says is
    // what the agent's own /report says, field for field, nothing pruned
    // by the CRD's structural schema.
    assert!(
        wait_until(Duration::from_secs(20), || plane
            .get_json(&["datapathreport", &node])
            .is_some()),
        "no report: {}",
        agent.log()
    );
    let report = plane.get_json(&["datapathreport", &node]).unwrap();
    assert_eq!(report["node"], node.as_str());
    assert_eq!(report["metadata"]["ownerReferences"][0]["kind"], "Node");
    let node_uid = plane.get_json(&["node", &node]).unwrap()["metadata"]["uid"].clone();
    assert_eq!(report["metadata"]["ownerReferences"][0]["uid"], node_uid);
    assert_eq!(report["condition"]["reason"], "NfsNotRdma");
    for field in ["finishedAt", "durationSeconds", "intervalSeconds", "zerohopVersion"] {
        assert!(!report["pass"][field].is_null(), "{field} pruned: {report}");
    }
    let document: Value = serde_json::from_str(&agent.get("/report", None).body).unwrap();
    for (key, stored) in [
        ("pass", "pass"),
        ("fail", "fail"),
        ("unknown", "unknown"),
        ("blocked", "blocked"),
        ("not-applicable", "notApplicable"),
    ] {
        assert_eq!(
            report["summary"][stored], document["summary"][key],
            "{stored}: {report}"
        );
    }
    let failing = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "NFS001")
        .unwrap_or_else(|| panic!("{report}"));
    let served = document["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "NFS001")
        .unwrap();
    assert_eq!(failing["status"], "fail");
    assert_eq!(failing["message"], served["message"]);
    assert_eq!(failing["subject"], served["subject"]);
    assert_eq!(failing["fix"], served["remediation"]["summary"]);

    // The event about the node, created with the agent's own rights.
    let events = plane.list(&["events.v1.events.k8s.io", "-n", "default"]);
    let reasons: Vec<&str> = events
        .iter()
        .filter(|e| e["regarding"]["name"] == node.as_str())
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert!(
        reasons.contains(&"DataPathNotReady"),
        "{reasons:?}\n{}",
        agent.log()
    );
    let log = agent.log();
    assert!(!log.contains("forbidden"), "{log}");
}

#[test]
fn an_agent_that_writes_another_node_is_refused_by_the_server() {
    let Some(plane) = ControlPlane::shared() else {
        return;
    };
    install(plane);
    let own = plane.unique_name("gpu");
    let other = plane.unique_name("gpu");
    create_node(plane, &own);
    create_node(plane, &other);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = agent_identity(plane, &own, dir.path());
    let as_agent = |args: &[&str], stdin: Option<&str>| {
        let mut command = plane.kubectl();
        command.arg("--kubeconfig").arg(&kubeconfig).args(args);
        let output = command
            .stdin(if stdin.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                if let Some(input) = stdin {
                    use std::io::Write as _;
                    child.stdin.take().unwrap().write_all(input.as_bytes())?;
                }
                child.wait_with_output()
            })
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    // The agent's own request, a server-side apply of its condition to
    // the status subresource (a PATCH: the only verb its role grants).
    let update = |node: &str| {
        let condition = json!({
            "apiVersion": "v1", "kind": "Node", "metadata": { "name": node },
            "status": { "conditions": [{
                "type": CONDITION, "status": "True", "reason": "Forged", "message": "",
                "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }] },
        });
        as_agent(
            &[
                "apply",
                "--server-side",
                "--subresource=status",
                "--field-manager=zerohop-agent",
                "--force-conflicts",
                "-f",
                "-",
            ],
            Some(&condition.to_string()),
        )
    };

    // Its own node: allowed by RBAC and by the policy.
    let (ok, err) = update(&own);
    assert!(ok, "{err}");

    // Another node: RBAC lets the agent patch every node's status (a
    // ClusterRole cannot name "the node I run on"); the admission policy
    // refuses, with its own words and the node the token names.
    let (ok, err) = update(&other);
    assert!(!ok, "the agent on {own} wrote {other}'s status");
    assert!(
        err.contains("zerohop-agent-own-node")
            && err.contains(&format!(
                "the agent on {own} may write only its own node and report, not {other}"
            )),
        "{err}"
    );
    assert!(
        conditions(plane, &other)
            .iter()
            .all(|c| c["type"] != CONDITION)
    );

    // Another node's report: refused the same way.
    let report = json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": { "name": other }, "node": other,
    });
    let (ok, err) = as_agent(&["create", "-f", "-"], Some(&report.to_string()));
    assert!(!ok, "the agent on {own} created {other}'s report");
    assert!(err.contains("may write only its own node and report"), "{err}");

    // What RBAC never granted: deleting a node, reading secrets.
    let (ok, err) = as_agent(&["delete", "node", &other, "--wait=false"], None);
    assert!(!ok);
    assert!(err.contains("Forbidden") || err.contains("forbidden"), "{err}");
    let (ok, err) = as_agent(&["get", "secrets", "-n", NAMESPACE], None);
    assert!(!ok);
    assert!(err.contains("forbidden"), "{err}");

    // A real agent given the other node's name: refused by the server, and
    // it says so in the server's words; nothing is written.
    let root = dir.path().join("host");
    copy_tree(&fixture("NFS001/fail-rdma-option-tcp-transports"), &root);
    let agent = Agent::start(
        &agent_args(root.to_str().unwrap(), kubeconfig.to_str().unwrap()),
        &[("NODE_NAME", &other)],
    );
    assert!(
        wait_until(Duration::from_secs(30), || agent
            .log()
            .contains("may write only its own node and report")),
        "{}",
        agent.log()
    );
    assert!(
        conditions(plane, &other)
            .iter()
            .all(|c| c["type"] != CONDITION)
    );
    assert!(plane.get_json(&["datapathreport", &other]).is_none());
}

#[test]
fn uninstall_leaves_no_condition_and_no_report_and_the_kubelets_conditions_stay() {
    // A plane of its own: `--uninstall` clears every node of the cluster.
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    install(&plane);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("host");
    copy_tree(&fixture("NFS001/fail-rdma-option-tcp-transports"), &root);
    let nodes = ["gpu-1", "gpu-2"];
    for node in nodes {
        create_node(&plane, node);
        let kubeconfig = agent_identity(&plane, node, dir.path());
        let mut agent = Agent::start(
            &agent_args(root.to_str().unwrap(), kubeconfig.to_str().unwrap()),
            &[("NODE_NAME", node)],
        );
        assert!(
            wait_until(Duration::from_secs(30), || ours(&plane, node).is_some()
                && plane.get_json(&["datapathreport", node]).is_some()),
            "{}",
            agent.log()
        );
        // The DaemonSet is deleted first: every agent has stopped.
        agent.terminate(Duration::from_secs(5)).expect("it stops");
    }

    let out = zerohop()
        .args(["agent", "--uninstall", "--kubeconfig"])
        .arg(plane.kubeconfig())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for node in nodes {
        let left = conditions(&plane, node);
        assert!(left.iter().all(|c| c["type"] != CONDITION), "{left:?}");
        assert!(left.iter().any(|c| c["type"] == "Ready"), "{left:?}");
    }
    let reports = plane.list(&["datapathreports"]);
    assert!(reports.is_empty(), "{reports:?}");
}
