//! `zerohop agent --uninstall` end to end: the real binary against the
//! real kube-apiserver (`tools/control-plane`), after a real agent wrote
//! its condition and report object under its own identity and was
//! stopped, on a cluster large enough to be listed in several pages. Every
//! node loses our condition and keeps the kubelet's, every report object
//! is deleted, and `fleet` then sees nodes without an agent.

#![cfg(feature = "cluster")]

mod agent_support;

use std::time::Duration;

use agent_support::{
    Agent, agent_identity, copy_tree, fixture, fleet, install_agent, now_minus, wait_until, zerohop,
};
use serde_json::{Value, json};
use zerohop_known::zerohop_api::{API_VERSION, CONDITION_TYPE as CONDITION, KIND};
use zerohop_testkit::control_plane::ControlPlane;

/// More than two pages of the 500 Nodes `--uninstall` lists at a time.
const SEEDED: usize = 1_100;
const LIMIT: Duration = Duration::from_secs(60);

fn kubelet_ready() -> Value {
    json!({ "type": "Ready", "status": "True", "reason": "KubeletReady",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z" })
}

fn conditions(plane: &ControlPlane, name: &str) -> Value {
    plane.get_json(&["node", name]).unwrap()["status"]["conditions"].clone()
}

fn seeded_name(index: usize) -> String {
    format!("gpu-{index:04}")
}

/// A Node with `conditions` in its status (a Node's status may be set at
/// creation, as the kubelet registers it).
fn node(name: &str, conditions: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "labels": { "nvidia.com/gpu.present": "true" } },
        "status": { "conditions": conditions },
    })
}

/// The server's own count of requests, by verb, resource and subresource
/// (`apiserver_request_total`, summed over response codes).
fn requests(plane: &ControlPlane, verb: &str, resource: &str, subresource: &str) -> u64 {
    let metrics = plane.kubectl_ok(&["get", "--raw", "/metrics"], None);
    metrics
        .lines()
        .filter(|line| line.starts_with("apiserver_request_total{"))
        .filter(|line| {
            line.contains(&format!("verb=\"{verb}\""))
                && line.contains(&format!("resource=\"{resource}\""))
                && line.contains(&format!("subresource=\"{subresource}\""))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn uninstall_removes_the_condition_and_the_reports_from_every_node() {
    let Some(plane) = ControlPlane::shared() else {
        return;
    };
    plane.create_all(vec![node("agent-node", json!([kubelet_ready()]))]);

    // One node's state as its agent writes it; the agent is then stopped,
    // as deleting the DaemonSet stops every agent before the removal.
    let dir = tempfile::tempdir().unwrap();
    install_agent(plane);
    let kubeconfig = agent_identity(plane, "agent-node", dir.path());
    let root = dir.path().join("host");
    copy_tree(&fixture("NFS001/fail-rdma-option-tcp-transports"), &root);
    let mut agent = Agent::start(
        &[
            "--root",
            root.to_str().unwrap(),
            "--interval",
            "1s",
            "--node-condition",
            "--report-object",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
        &[("NODE_NAME", "agent-node")],
    );
    let has_ours = |name: &str| {
        conditions(plane, name)
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == CONDITION))
    };
    assert!(
        wait_until(Duration::from_secs(30), || has_ours("agent-node")
            && plane.get_json(&["datapathreport", "agent-node"]).is_some()),
        "the agent wrote no condition or report: {}",
        agent.log()
    );
    assert!(agent.terminate(Duration::from_secs(10)).is_some());

    // The rest of the fleet, seeded: our condition next to the kubelet's,
    // a report each; and one node the agent never ran on.
    let ours = json!({ "type": CONDITION, "status": "True", "reason": "DataPathReady",
                       "message": "no check fails", "lastHeartbeatTime": now_minus(5),
                       "lastTransitionTime": now_minus(3600) });
    let mut objects: Vec<Value> = (0..SEEDED)
        .map(|index| node(&seeded_name(index), json!([kubelet_ready(), ours])))
        .collect();
    objects.push(node("never-ran", json!([kubelet_ready()])));
    objects.extend((0..SEEDED).map(|index| {
        let name = seeded_name(index);
        json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "metadata": { "name": name }, "node": name,
            "pass": { "intervalSeconds": 300 }, "findings": [],
        })
    }));
    plane.create_all(objects);
    let lists_before = requests(plane, "LIST", "nodes", "");
    let patches_before = requests(plane, "PATCH", "nodes", "status");

    let out = zerohop()
        .args(["agent", "--uninstall", "--kubeconfig"])
        .arg(plane.kubeconfig())
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "removed the {CONDITION} condition from {} node(s)",
            SEEDED + 1
        )),
        "{stdout}"
    );
    assert!(stdout.contains("deleted every DataPathReport"), "{stdout}");

    // Three pages of Nodes by the server's own count, a patch per node
    // that had the condition (none for the one that did not).
    assert_eq!(requests(plane, "LIST", "nodes", "") - lists_before, 3);
    assert_eq!(
        requests(plane, "PATCH", "nodes", "status") - patches_before,
        u64::try_from(SEEDED + 1).unwrap()
    );

    // Every node: ours gone, the kubelet's as it was (the server's
    // strategic merge removed only the element whose merge key is ours).
    let nodes = plane.list(&["nodes"]);
    assert_eq!(nodes.len(), SEEDED + 2);
    for stored in &nodes {
        assert_eq!(
            stored["status"]["conditions"],
            json!([kubelet_ready()]),
            "{}",
            stored["metadata"]["name"]
        );
    }
    assert!(plane.list(&["datapathreports"]).is_empty());

    // What an operator then sees: data path nodes without an agent.
    let (code, view, err) = fleet(
        &[
            "--format",
            "json",
            "--kubeconfig",
            plane.kubeconfig().to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(code, Some(1), "{view}{err}");
    let view: Value = serde_json::from_str(&view).unwrap();
    assert_eq!(view["summary"]["nodes"], SEEDED + 2, "{}", view["summary"]);
    assert_eq!(
        view["summary"]["no_agent"],
        SEEDED + 2,
        "{}",
        view["summary"]
    );
}

#[test]
fn uninstall_twice_finds_nothing_left_and_a_missing_crd_is_no_error() {
    // A plane of its own: without the report CRD, and `--uninstall`
    // clears every node of its cluster.
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    let ours = json!({ "type": CONDITION, "status": "False", "reason": "RdmaPortDown",
                       "lastHeartbeatTime": now_minus(5), "lastTransitionTime": now_minus(60) });
    plane.create_all(vec![node("gpu-1", json!([kubelet_ready(), ours]))]);
    let uninstall = || {
        zerohop()
            .args(["agent", "--uninstall", "--kubeconfig"])
            .arg(plane.kubeconfig())
            .env_remove("KUBECONFIG")
            .output()
            .unwrap()
    };
    let first = uninstall();
    let text = String::from_utf8_lossy(&first.stdout);
    assert_eq!(first.status.code(), Some(0), "{text}");
    assert!(text.contains("from 1 node(s)"), "{text}");
    // The real server's discovery has no zerohop.dev group: not an error.
    assert!(
        text.contains("no DataPathReport to delete: its CRD is not installed"),
        "{text}"
    );
    assert_eq!(conditions(&plane, "gpu-1"), json!([kubelet_ready()]));
    let second = uninstall();
    let text = String::from_utf8_lossy(&second.stdout);
    assert_eq!(second.status.code(), Some(0), "{text}");
    assert!(text.contains("from 0 node(s)"), "{text}");
}
