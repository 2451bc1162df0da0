//! The real `zerohop agent` against the real kube-apiserver and etcd
//! (`tools/control-plane`), installed from its own manifests and running
//! under its own identity: the `zerohop-agent` service account, with a
//! token from the TokenRequest API bound to a Pod on its node, as the
//! kubelet obtains one. What it stores (condition, report object, events)
//! is judged by the server itself: the status subresource, strategic-merge
//! list semantics, structural-schema pruning, RBAC, and the admission
//! policy's CEL over `request.userInfo`; and what it serves (`/metrics`,
//! `/report`, `/healthz`, `/readyz`), its features file, and SIGTERM.

#![cfg(feature = "cluster")]

mod agent_support;

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use agent_support::{
    AGENT_NAMESPACE as NAMESPACE, Agent, agent_identity, copy_tree, fixture, fleet, install_agent,
    wait_until,
};
use serde_json::{Value, json};
use zerohop_known::zerohop_api::{API_VERSION, CONDITION_TYPE as CONDITION, KIND};
use zerohop_testkit::control_plane::ControlPlane;

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

/// node-problem-detector's condition, written beside the kubelet's.
fn npd_condition() -> Value {
    json!({ "type": "KernelDeadlock", "status": "False", "reason": "KernelHasNoDeadlock",
            "message": "kernel has no deadlock",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z" })
}

/// What the kubelet sends every 10 s: a strategic merge patch of
/// `nodes/NAME/status` naming its own conditions only
/// (pkg/kubelet/kubelet_node_status.go, `PatchNodeStatus`).
fn kubelet_heartbeat(plane: &ControlPlane, name: &str, heartbeat: &str) {
    status_patch(plane, name, json!([kubelet_ready(heartbeat)]));
}

/// A strategic merge patch of `nodes/NAME/status` with `conditions`, as
/// the kubelet and node-problem-detector write theirs.
fn status_patch(plane: &ControlPlane, name: &str, conditions: Value) {
    let patch = json!({ "status": { "conditions": conditions } });
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

/// A Node of the plane, the agent's identity on it, and its host tree.
struct Host {
    dir: tempfile::TempDir,
    root: PathBuf,
    kubeconfig: PathBuf,
}

/// Creates Node `node` with the kubelet's condition, the agent's Pod and
/// token on it, and a host tree whose NFS mount runs over TCP where RDMA
/// was asked for: a failing data path, so that the condition, the report
/// and an event all have something to say.
fn failing_host(plane: &ControlPlane, node: &str) -> Host {
    create_node(plane, node);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = agent_identity(plane, node, dir.path());
    let root = dir.path().join("host");
    copy_tree(&fixture("NFS001/fail-rdma-option-tcp-transports"), &root);
    Host {
        dir,
        root,
        kubeconfig,
    }
}

#[test]
fn the_agent_under_its_own_identity_writes_its_node_and_report_and_the_kubelet_keeps_its_own() {
    let Some(plane) = ControlPlane::shared() else {
        return;
    };
    install_agent(plane);
    let node = plane.unique_name("gpu");
    let host = failing_host(plane, &node);
    status_patch(plane, &node, json!([npd_condition()]));
    let features = host.dir.path().join("features.d");
    fs::create_dir(&features).unwrap();
    let mut args = agent_args(
        host.root.to_str().unwrap(),
        host.kubeconfig.to_str().unwrap(),
    );
    args.extend([
        "--counters-interval",
        "1s",
        "--features-dir",
        features.to_str().unwrap(),
    ]);
    let mut agent = Agent::start(&args, &[("NODE_NAME", &node)]);

    // The condition, written through the status subresource by
    // server-side apply, beside the kubelet's and node-problem-detector's,
    // which stay as they were.
    assert!(
        wait_until(Duration::from_secs(30), || ours(plane, &node).is_some()),
        "no condition: {}",
        agent.log()
    );
    let condition = ours(plane, &node).unwrap();
    assert_eq!(condition["status"], "False", "{condition}");
    assert_eq!(condition["reason"], "NfsNotRdma", "{condition}");
    assert!(
        condition["message"]
            .as_str()
            .unwrap()
            .starts_with("NFS001 "),
        "{condition}"
    );
    let stored = conditions(plane, &node);
    assert_eq!(stored.len(), 3, "{stored:?}");
    assert!(stored.contains(&kubelet_ready("2026-01-01T00:00:00Z")));
    assert!(stored.contains(&npd_condition()));
    // Server-side apply by its own field manager, on the status
    // subresource: the server records who owns our condition, and only it.
    let managed = plane
        .get_json(&["node", &node, "--show-managed-fields"])
        .unwrap()["metadata"]["managedFields"]
        .clone();
    let entry = managed
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "zerohop-agent")
        .unwrap_or_else(|| panic!("{managed}"));
    assert_eq!(entry["operation"], "Apply", "{entry}");
    assert_eq!(entry["subresource"], "status", "{entry}");
    let owned = entry["fieldsV1"].to_string();
    assert!(
        owned.contains(&format!("{{\\\"type\\\":\\\"{CONDITION}\\\"}}")),
        "{owned}"
    );
    assert!(!owned.contains("KernelDeadlock"), "{owned}");

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
    for field in [
        "finishedAt",
        "durationSeconds",
        "intervalSeconds",
        "zerohopVersion",
    ] {
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

    // The features file: the NFS capability, with an expiry.
    let text = fs::read_to_string(features.join("zerohop")).unwrap();
    assert!(text.contains("\nzerohop.dev/nfs-rdma=broken\n"), "{text}");
    assert!(text.contains("# +expiry-time="), "{text}");

    // The endpoints.
    assert_eq!(agent.get("/healthz", None).status, 200);
    assert_eq!(agent.get("/readyz", None).status, 200);
    // The pass the report comes from: which node, when, how long.
    let pass = &document["pass"];
    assert_eq!(pass["node"], node.as_str());
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
        text.body.contains(&format!(
            "zerohop_data_path_status{{node=\"{node}\",status=\"False\",reason=\"NfsNotRdma\"}} 1"
        )),
        "{}",
        text.body
    );
    assert!(text.body.contains(&format!("zerohop_check_status{{node=\"{node}\",check=\"NFS001\",name=\"nfs-not-rdma\",group=\"nfs\",status=\"fail\"}} 1")));
    assert!(text.body.contains("# TYPE zerohop_passes_total counter"));
    // No read of the fixture blocks: no reader thread is left behind.
    assert!(
        text.body
            .contains(&format!("zerohop_host_reads_stuck{{node=\"{node}\"}} 0")),
        "{}",
        text.body
    );
    assert!(text.body.contains(&format!(
        "zerohop_nfs_transports{{node=\"{node}\",mountpoint=\"/mnt/data\""
    )));
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

/// The events in `default` about Node `node`, by reason.
fn event_reasons(plane: &ControlPlane, node: &str) -> Vec<(String, Value)> {
    plane
        .list(&["events.v1.events.k8s.io", "-n", "default"])
        .into_iter()
        .filter(|e| e["regarding"]["name"] == node)
        .map(|e| (e["reason"].as_str().unwrap_or_default().to_owned(), e))
        .collect()
}

#[test]
fn a_fix_is_announced_once_and_a_restart_keeps_the_transition_time() {
    let Some(plane) = ControlPlane::shared() else {
        return;
    };
    install_agent(plane);
    let node = plane.unique_name("gpu");
    let host = failing_host(plane, &node);
    let args = agent_args(
        host.root.to_str().unwrap(),
        host.kubeconfig.to_str().unwrap(),
    );
    let mut agent = Agent::start(&args, &[("NODE_NAME", &node)]);
    let status_is = |status: &str| ours(plane, &node).is_some_and(|c| c["status"] == status);
    assert!(
        wait_until(Duration::from_secs(30), || status_is("False")),
        "{}",
        agent.log()
    );

    // The administrator fixes the mount: the next pass sees RDMA transports.
    copy_tree(&fixture("NFS001/pass-rdma"), &host.root);
    assert!(
        wait_until(Duration::from_secs(30), || status_is("True")),
        "{}",
        agent.log()
    );
    let fixed = ours(plane, &node).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || event_reasons(plane, &node)
            .iter()
            .any(|(reason, _)| reason == "CheckRecovered")),
        "{}",
        agent.log()
    );
    let events = event_reasons(plane, &node);
    let reasons: Vec<&str> = events.iter().map(|(r, _)| r.as_str()).collect();
    assert!(reasons.contains(&"DataPathNotReady"), "{reasons:?}");
    assert!(reasons.contains(&"DataPathReady"), "{reasons:?}");
    let recovered: Vec<&Value> = events
        .iter()
        .filter(|(r, _)| r == "CheckRecovered")
        .map(|(_, e)| e)
        .collect();
    assert_eq!(recovered.len(), 1, "{events:?}");
    assert_eq!(recovered[0]["note"], "NFS001 passes again");
    // Passes that find the same again write heartbeats, never new events:
    // the same objects, not one more.
    let count = events.len();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(event_reasons(plane, &node).len(), count);
    agent.terminate(Duration::from_secs(2)).expect("exits");

    // A new agent on the same node: the first pass agrees with the stored
    // condition, so its transition time is kept and nothing is announced.
    let mut again = Agent::start(&args, &[("NODE_NAME", &node)]);
    assert!(
        wait_until(Duration::from_secs(30), || ours(plane, &node).is_some_and(
            |c| c["lastHeartbeatTime"] != fixed["lastHeartbeatTime"]
        )),
        "no new heartbeat: {}",
        again.log()
    );
    let after = ours(plane, &node).unwrap();
    assert_eq!(after["lastTransitionTime"], fixed["lastTransitionTime"]);
    assert_eq!(
        event_reasons(plane, &node).len(),
        count,
        "a restart announces nothing"
    );
    again.terminate(Duration::from_secs(2)).expect("exits");
}

#[test]
fn without_the_report_crd_the_condition_keeps_its_heartbeat_and_fleet_never_calls_the_node_stale() {
    // A plane of its own: the CRD is cluster-wide.
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    install_agent(&plane);
    plane.kubectl_ok(&["delete", "crd", "datapathreports.zerohop.dev"], None);
    let host = failing_host(&plane, "n1");
    let agent = Agent::start(
        &agent_args(
            host.root.to_str().unwrap(),
            host.kubeconfig.to_str().unwrap(),
        ),
        &[("NODE_NAME", "n1")],
    );
    assert!(
        wait_until(Duration::from_secs(30), || ours(&plane, "n1").is_some()),
        "no condition written: {}",
        agent.log()
    );
    // The report object keeps failing (404) and backs off, 1, 2, 4, 8 s…;
    // after ten seconds a heartbeat held back with it would be older than
    // three 1 s intervals.
    std::thread::sleep(Duration::from_secs(10));
    let admin = plane.kubeconfig();
    let args = [
        "--kubeconfig",
        admin.to_str().unwrap(),
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

#[test]
fn an_agent_that_writes_another_node_is_refused_by_the_server() {
    let Some(plane) = ControlPlane::shared() else {
        return;
    };
    install_agent(plane);
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
    let update = |node: &str, dry_run: bool| {
        let condition = json!({
            "apiVersion": "v1", "kind": "Node", "metadata": { "name": node },
            "status": { "conditions": [{
                "type": CONDITION, "status": "True", "reason": "Forged", "message": "",
                "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }] },
        });
        let mut args = vec![
            "apply",
            "--server-side",
            "--subresource=status",
            "--field-manager=zerohop-agent",
            "--force-conflicts",
            "-f",
            "-",
        ];
        if dry_run {
            args.push("--dry-run=server");
        }
        as_agent(&args, Some(&condition.to_string()))
    };

    // The admission plugin takes a policy created a moment ago from its
    // informer, not at once: the policy is in force once a dry run (which
    // is admitted as the request itself, and writes nothing) is refused.
    assert!(
        wait_until(Duration::from_secs(30), || !update(&other, true).0),
        "the admission policy never came into force"
    );

    // Its own node: allowed by RBAC and by the policy.
    let (ok, err) = update(&own, false);
    assert!(ok, "{err}");

    // Another node: RBAC lets the agent patch every node's status (a
    // ClusterRole cannot name "the node I run on"); the admission policy
    // refuses, with its own words and the node the token names.
    let (ok, err) = update(&other, false);
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
    assert!(
        err.contains("may write only its own node and report"),
        "{err}"
    );

    // What RBAC never granted: deleting a node, reading secrets.
    let (ok, err) = as_agent(&["delete", "node", &other, "--wait=false"], None);
    assert!(!ok);
    assert!(
        err.contains("Forbidden") || err.contains("forbidden"),
        "{err}"
    );
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
