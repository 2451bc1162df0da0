//! The real `zerohop agent` binary against an in-memory API server on
//! 127.0.0.1: what it stores (condition, report object, events), what it
//! serves (`/metrics`, `/report`, `/healthz`, `/readyz`), its features
//! file, and SIGTERM.

#![cfg(feature = "cluster")]

mod agent_support;

use std::fs;
use std::time::Duration;

use agent_support::{Agent, copy_tree, fixture, fleet, node, wait_until};
use serde_json::{Value, json};
use zerohop_testkit::fake_api_server::FakeApiServer;

const CONDITION: &str = "zerohop.dev/DataPathReady";

fn ours(node: &Value) -> Option<Value> {
    node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == CONDITION)
        .cloned()
}

fn kubelet_and_npd_conditions() -> Value {
    json!([
        { "type": "Ready", "status": "True", "reason": "KubeletReady",
          "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z" },
        { "type": "KernelDeadlock", "status": "False", "reason": "KernelHasNoDeadlock",
          "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z" },
    ])
}

#[test]
fn one_pass_feeds_the_condition_the_report_object_the_labels_the_events_and_metrics() {
    let api = FakeApiServer::start();
    api.set_report_crd(true);
    api.put_node(node("gpu-node-1", json!({}), kubelet_and_npd_conditions()));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let root = dir.path().join("host");
    copy_tree(&fixture("NFS001/fail-rdma-option-tcp-transports"), &root);
    let features = dir.path().join("features.d");
    fs::create_dir(&features).unwrap();
    let mut agent = Agent::start(
        &[
            "--root",
            root.to_str().unwrap(),
            "--interval",
            "1s",
            "--counters-interval",
            "1s",
            "--features-dir",
            features.to_str().unwrap(),
            "--node-condition",
            "--report-object",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
        &[("NODE_NAME", "gpu-node-1")],
    );

    // The condition: written by server-side apply, next to the kubelet's
    // and node-problem-detector's, which stay as they were.
    assert!(
        wait_until(Duration::from_secs(20), || api
            .node("gpu-node-1")
            .and_then(|n| ours(&n))
            .is_some()),
        "no condition written: {}",
        agent.log()
    );
    let stored = api.node("gpu-node-1").unwrap();
    let conditions = stored["status"]["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 3, "{conditions:?}");
    assert_eq!(conditions[0], kubelet_and_npd_conditions()[0]);
    assert_eq!(conditions[1], kubelet_and_npd_conditions()[1]);
    let condition = ours(&stored).unwrap();
    assert_eq!(condition["status"], "False");
    assert_eq!(condition["reason"], "NfsNotRdma");
    assert!(
        condition["message"]
            .as_str()
            .unwrap()
            .starts_with("NFS001 "),
        "{condition}"
    );
    let apply = api
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH" && r.uri.starts_with("/api/v1/nodes/gpu-node-1/status"))
        .expect("an apply of the status");
    assert!(
        apply.uri.contains("fieldManager=zerohop-agent"),
        "{}",
        apply.uri
    );
    assert!(apply.uri.contains("force=true"), "{}", apply.uri);
    assert_eq!(
        apply.content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    let body: Value = serde_json::from_str(&apply.body).unwrap();
    assert_eq!(
        body["status"]["conditions"].as_array().unwrap().len(),
        1,
        "the apply names only our condition: {body}"
    );

    // The report object: owned by the Node, with the failing finding.
    assert!(wait_until(Duration::from_secs(10), || api
        .report("gpu-node-1")
        .is_some()));
    let report = api.report("gpu-node-1").unwrap();
    assert_eq!(
        report["metadata"]["ownerReferences"][0]["uid"],
        "uid-gpu-node-1"
    );
    assert_eq!(report["metadata"]["ownerReferences"][0]["kind"], "Node");
    assert_eq!(report["condition"]["status"], "False");
    assert_eq!(report["findings"][0]["id"], "NFS001");
    assert_eq!(report["findings"][0]["status"], "fail");

    // One event announces the broken data path, about the Node.
    assert!(wait_until(Duration::from_secs(10), || !api
        .events()
        .is_empty()));
    let events = api.events();
    let event = events
        .iter()
        .find(|e| e["reason"] == "DataPathNotReady")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(event["regarding"]["name"], "gpu-node-1");
    assert_eq!(event["regarding"]["kind"], "Node");
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["metadata"]["namespace"], "default");

    // The features file: the NFS capability, with an expiry.
    let text = fs::read_to_string(features.join("zerohop")).unwrap();
    assert!(text.contains("\nzerohop.dev/nfs-rdma=broken\n"), "{text}");
    assert!(text.contains("# +expiry-time="), "{text}");

    // The endpoints.
    assert_eq!(agent.get("/healthz", None).status, 200);
    assert_eq!(agent.get("/readyz", None).status, 200);
    let report_json = agent.get("/report", None);
    assert_eq!(report_json.status, 200);
    let document: Value = serde_json::from_str(&report_json.body).unwrap();
    assert_eq!(document["command"], "doctor");
    assert!(document["summary"]["fail"].as_u64().unwrap() >= 1);
    // The pass it comes from: which node, when, how long.
    let pass = &document["pass"];
    assert_eq!(pass["node"], "gpu-node-1");
    assert!(
        pass["started_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{document}"
    );
    assert!(pass["duration_ms"].is_u64(), "{document}");
    assert!(wait_until(Duration::from_secs(10), || agent
        .get("/metrics", None)
        .body
        .contains("zerohop_nfs_transports{")));
    let text = agent.get("/metrics", None);
    assert_eq!(
        text.header("content-type").as_deref(),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(!text.body.contains("# EOF"));
    assert!(
        text.body.contains(
            "zerohop_data_path_status{node=\"gpu-node-1\",status=\"False\",reason=\"NfsNotRdma\"} 1"
        ),
        "{}",
        text.body
    );
    assert!(text.body.contains("zerohop_check_status{node=\"gpu-node-1\",check=\"NFS001\",name=\"nfs-not-rdma\",group=\"nfs\",status=\"fail\"} 1"));
    assert!(text.body.contains("# TYPE zerohop_passes_total counter"));
    // No read of the fixture blocks: no reader thread is left behind.
    assert!(
        text.body
            .contains("zerohop_host_reads_stuck{node=\"gpu-node-1\"} 0"),
        "{}",
        text.body
    );
    assert!(
        text.body
            .contains("zerohop_nfs_transports{node=\"gpu-node-1\",mountpoint=\"/mnt/data\"")
    );
    let openmetrics = agent.get(
        "/metrics",
        Some("application/openmetrics-text; version=1.0.0"),
    );
    assert_eq!(
        openmetrics.header("content-type").as_deref(),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(openmetrics.body.ends_with("# EOF\n"));
    assert!(openmetrics.body.contains("# TYPE zerohop_passes counter"));

    // SIGTERM: the labels go, the process ends at once and cleanly.
    let (status, took) = agent
        .terminate(Duration::from_secs(2))
        .expect("the agent exits within 2 s of SIGTERM");
    assert_eq!(status.code(), Some(143), "128 + SIGTERM");
    assert!(took < Duration::from_secs(2));
    assert!(!features.join("zerohop").exists());
}

#[test]
fn a_fix_is_announced_once_and_a_restart_keeps_the_transition_time() {
    let api = FakeApiServer::start();
    api.put_node(node("n1", json!({}), json!([])));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let root = dir.path().join("host");
    copy_tree(&fixture("NFS001/fail-rdma-option-tcp-transports"), &root);
    let args = [
        "--root",
        root.to_str().unwrap(),
        "--interval",
        "1s",
        "--node-condition",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ];
    let mut agent = Agent::start(&args, &[("NODE_NAME", "n1")]);
    let status_is = |api: &FakeApiServer, status: &str| {
        api.node("n1")
            .and_then(|n| ours(&n))
            .is_some_and(|c| c["status"] == status)
    };
    assert!(
        wait_until(Duration::from_secs(20), || status_is(&api, "False")),
        "{}",
        agent.log()
    );

    // The administrator fixes the mount: the next pass sees RDMA transports.
    copy_tree(&fixture("NFS001/pass-rdma"), &root);
    assert!(
        wait_until(Duration::from_secs(20), || status_is(&api, "True")),
        "{}",
        agent.log()
    );
    let fixed = ours(&api.node("n1").unwrap()).unwrap();
    assert!(wait_until(Duration::from_secs(10), || {
        api.events().iter().any(|e| e["reason"] == "CheckRecovered")
    }));
    let events = api.events();
    let reasons: Vec<&str> = events.iter().filter_map(|e| e["reason"].as_str()).collect();
    assert!(reasons.contains(&"DataPathNotReady"), "{reasons:?}");
    assert!(reasons.contains(&"DataPathReady"), "{reasons:?}");
    let recovered: Vec<&Value> = events
        .iter()
        .filter(|e| e["reason"] == "CheckRecovered")
        .collect();
    assert_eq!(recovered.len(), 1, "{events:?}");
    assert_eq!(recovered[0]["note"], "NFS001 passes again");
    // Passes that find the same again write heartbeats, never new events.
    let count = events.len();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(api.events().len(), count);
    agent.terminate(Duration::from_secs(2)).expect("exits");

    // A new agent on the same node: the first pass agrees with the stored
    // condition, so its transition time is kept and nothing is announced.
    let mut again = Agent::start(&args, &[("NODE_NAME", "n1")]);
    let requests_before = api.requests().len();
    assert!(wait_until(Duration::from_secs(20), || {
        api.requests()[requests_before..]
            .iter()
            .any(|r| r.method == "PATCH" && r.uri.contains("/status"))
    }));
    let after = ours(&api.node("n1").unwrap()).unwrap();
    assert_eq!(after["lastTransitionTime"], fixed["lastTransitionTime"]);
    assert_ne!(after["lastHeartbeatTime"], Value::Null);
    assert_eq!(api.events().len(), count, "a restart announces nothing");
    again.terminate(Duration::from_secs(2)).expect("exits");
}

#[test]
fn without_a_node_name_the_kubernetes_outputs_refuse_to_start() {
    let out = agent_support::zerohop()
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
    let out = agent_support::zerohop()
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

#[test]
fn without_the_report_crd_the_condition_keeps_its_heartbeat_and_fleet_never_calls_the_node_stale() {
    let api = FakeApiServer::start();
    api.set_report_crd(false);
    api.put_node(node("n1", json!({}), json!([])));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let root = dir.path().join("host");
    copy_tree(&fixture("NFS001/fail-rdma-option-tcp-transports"), &root);
    let agent = Agent::start(
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
        &[("NODE_NAME", "n1")],
    );
    assert!(
        wait_until(Duration::from_secs(20), || api
            .node("n1")
            .and_then(|n| ours(&n))
            .is_some()),
        "no condition written: {}",
        agent.log()
    );
    // The report object keeps failing (404) and backs off, 1, 2, 4, 8 s…;
    // after ten seconds a heartbeat held back with it would be older than
    // three 1 s intervals.
    std::thread::sleep(Duration::from_secs(10));
    let kubeconfig = kubeconfig.to_str().unwrap();
    let args = [
        "--kubeconfig",
        kubeconfig,
        "--interval",
        "1s",
        "--format",
        "json",
    ];
    let (_, out, err) = fleet(&args, Duration::from_secs(20));
    let view: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(view["nodes"][0]["name"], "n1", "{view}");
    assert_eq!(
        view["nodes"][0]["state"],
        "NotReady",
        "{view}\n{}",
        agent.log()
    );
    let log = agent.log();
    assert!(
        log.contains("the DataPathReport CRD is not installed"),
        "{log}"
    );
}
