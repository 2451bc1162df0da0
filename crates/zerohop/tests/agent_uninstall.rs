//! `zerohop agent --uninstall` end to end: the real binary against the
//! in-memory API server, after a real agent wrote its condition and report
//! object and was stopped, on a cluster large enough to be listed in
//! several pages. Every node loses our condition and keeps the kubelet's,
//! every report object is deleted, and `fleet` then sees nodes without an
//! agent.

#![cfg(feature = "cluster")]

mod agent_support;

use std::time::Duration;

use agent_support::{Agent, copy_tree, fixture, fleet, node, now_minus, wait_until, zerohop};
use serde_json::{Value, json};
use zerohop_testkit::fake_api_server::FakeApiServer;

const CONDITION: &str = "zerohop.dev/DataPathReady";
/// More than two pages of the 500 Nodes `--uninstall` lists at a time.
const SEEDED: usize = 1_100;
const LIMIT: Duration = Duration::from_secs(60);

fn kubelet_ready() -> Value {
    json!({ "type": "Ready", "status": "True", "reason": "KubeletReady",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z" })
}

fn has_ours(node: &Value) -> bool {
    node["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == CONDITION))
}

fn seeded_name(index: usize) -> String {
    format!("gpu-{index:04}")
}

#[test]
fn uninstall_removes_the_condition_and_the_reports_from_every_node() {
    let api = FakeApiServer::start();
    api.set_report_crd(true);
    let gpu = json!({ "nvidia.com/gpu.present": "true" });
    api.put_node(node("agent-node", gpu.clone(), json!([kubelet_ready()])));

    // One node's state as its agent writes it; the agent is then stopped,
    // as deleting the DaemonSet stops every agent before the removal.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
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
    assert!(
        wait_until(Duration::from_secs(20), || api
            .node("agent-node")
            .is_some_and(|n| has_ours(&n))
            && api.report("agent-node").is_some()),
        "the agent wrote no condition or report: {}",
        agent.log()
    );
    assert!(agent.terminate(Duration::from_secs(10)).is_some());

    // The rest of the fleet, seeded: our condition next to the kubelet's,
    // a report each; and one node the agent never ran on.
    for index in 0..SEEDED {
        let name = seeded_name(index);
        let ours = json!({ "type": CONDITION, "status": "True", "reason": "DataPathReady",
                           "message": "no check fails", "lastHeartbeatTime": now_minus(5),
                           "lastTransitionTime": now_minus(3600) });
        api.put_node(node(&name, gpu.clone(), json!([kubelet_ready(), ours])));
        api.put_report(json!({
            "apiVersion": "zerohop.dev/v1alpha1", "kind": "DataPathReport",
            "metadata": { "name": name }, "node": name,
            "pass": { "intervalSeconds": 300 }, "findings": [],
        }));
    }
    api.put_node(node("never-ran", gpu, json!([kubelet_ready()])));
    let before = api.requests().len();

    let out = zerohop()
        .args(["agent", "--uninstall", "--kubeconfig"])
        .arg(&kubeconfig)
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

    // Every node: ours gone, the kubelet's as it was.
    let names = (0..SEEDED)
        .map(seeded_name)
        .chain(["agent-node".to_owned(), "never-ran".to_owned()]);
    for name in names {
        let stored = api.node(&name).unwrap();
        assert_eq!(
            stored["status"]["conditions"],
            json!([kubelet_ready()]),
            "{name}"
        );
        assert!(api.report(&name).is_none(), "{name}: a report is left");
    }

    // Three pages of Nodes, a patch per node that had the condition (none
    // for the one that did not), one delete of the reports.
    let requests = api.requests().split_off(before);
    let lists = requests
        .iter()
        .filter(|r| r.method == "GET" && r.uri.starts_with("/api/v1/nodes?"))
        .count();
    assert_eq!(lists, 3, "{:?}", &requests[..lists.min(5)]);
    let patches: Vec<_> = requests.iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(patches.len(), SEEDED + 1);
    assert!(patches.iter().all(|r| {
        r.content_type.as_deref() == Some("application/strategic-merge-patch+json")
            && !r.uri.starts_with("/api/v1/nodes/never-ran/")
    }));
    let deletes: Vec<_> = requests.iter().filter(|r| r.method == "DELETE").collect();
    assert_eq!(deletes.len(), 1, "{deletes:?}");

    // What an operator then sees: data path nodes without an agent.
    let (code, view, err) = fleet(
        &[
            "--format",
            "json",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
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
    let api = FakeApiServer::start();
    let ours = json!({ "type": CONDITION, "status": "False", "reason": "RdmaPortDown" });
    api.put_node(node("gpu-1", json!({}), json!([kubelet_ready(), ours])));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let uninstall = || {
        zerohop()
            .args(["agent", "--uninstall", "--kubeconfig"])
            .arg(&kubeconfig)
            .env_remove("KUBECONFIG")
            .output()
            .unwrap()
    };
    let first = uninstall();
    let text = String::from_utf8_lossy(&first.stdout);
    assert_eq!(first.status.code(), Some(0), "{text}");
    assert!(text.contains("from 1 node(s)"), "{text}");
    assert!(
        text.contains("no DataPathReport to delete: its CRD is not installed"),
        "{text}"
    );
    assert_eq!(
        api.node("gpu-1").unwrap()["status"]["conditions"],
        json!([kubelet_ready()])
    );
    let second = uninstall();
    let text = String::from_utf8_lossy(&second.stdout);
    assert_eq!(second.status.code(), Some(0), "{text}");
    assert!(text.contains("from 0 node(s)"), "{text}");
}
