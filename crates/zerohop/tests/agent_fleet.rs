//! The real `zerohop fleet` binary against the real kube-apiserver
//! (`tools/control-plane`): the states of nodes, the by-check view, JSON,
//! the exit codes and `--watch` turning a silent node stale. Paging,
//! continue tokens, refusals, selectors and the watch through a compaction
//! and a restart are in `fleet_real_cluster.rs`.

#![cfg(feature = "cluster")]

mod agent_support;

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use agent_support::{fleet, install_agent, now_minus, zerohop};
use serde_json::{Value, json};
use zerohop_known::zerohop_api::{API_VERSION, CONDITION_TYPE, KIND};
use zerohop_testkit::control_plane::ControlPlane;

const LIMIT: Duration = Duration::from_secs(20);

fn condition(status: &str, reason: &str, message: &str, age: i64) -> Value {
    json!({
        "type": CONDITION_TYPE,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now_minus(age),
        "lastTransitionTime": now_minus(age + 3600),
    })
}

/// A Node of the test's own (labelled `zerohop-test=TEST`, which the
/// test's `fleet` selects, so that tests share a plane), with `labels` and
/// `conditions` in its status, as the kubelet registers one.
fn node(test: &str, name: &str, mut labels: Value, conditions: Value) -> Value {
    labels["zerohop-test"] = json!(test);
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": format!("{name}-{test}"), "labels": labels },
        "status": { "conditions": conditions },
    })
}

fn gpu() -> Value {
    json!({ "nvidia.com/gpu.present": "true" })
}

/// Five kinds of node: ready, not ready (two checks), stale, no agent, and
/// a plain node that is not part of the data path; the test's name.
fn cluster(plane: &ControlPlane) -> String {
    let test = plane.unique_name("fleet");
    plane.create_all(vec![
        node(
            &test,
            "a-ready",
            gpu(),
            json!([condition("True", "DataPathReady", "no check fails", 10)]),
        ),
        node(
            &test,
            "b-broken",
            json!({ "nvidia.com/gpu.present": "true", "zerohop.dev/gpudirect-rdma": "broken" }),
            json!([condition(
                "False",
                "RdmaPortDown",
                "RDMA004 mlx5_0/1: bring the port up; 2 failing: GPU012, RDMA004",
                20
            )]),
        ),
        node(
            &test,
            "c-stale",
            gpu(),
            json!([condition("True", "DataPathReady", "no check fails", 3600)]),
        ),
        node(&test, "d-noagent", gpu(), json!([])),
        node(
            &test,
            "e-plain",
            json!({ "kubernetes.io/os": "linux" }),
            json!([]),
        ),
    ]);
    test
}

/// `fleet --kubeconfig ADMIN -l zerohop-test=TEST ARGS`.
fn fleet_of(plane: &ControlPlane, test: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let kubeconfig = plane.kubeconfig();
    let selector = format!("zerohop-test={test}");
    let mut all = vec![
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "-l",
        &selector,
    ];
    all.extend_from_slice(args);
    fleet(&all, LIMIT)
}

#[test]
fn every_node_gets_its_state_and_the_exit_code_says_not_all_are_ready() {
    // A plane of its own: without the report CRD.
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    let test = cluster(&plane);
    let (code, out, err) = fleet_of(&plane, &test, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NODE"), "{out}");
    // Worst first: not ready, stale, no agent, then ready.
    let order: Vec<(String, &str)> = lines[1..5]
        .iter()
        .map(|l| {
            let mut words = l.split_whitespace();
            (words.next().unwrap().to_owned(), words.next().unwrap())
        })
        .collect();
    let expected: Vec<(String, &str)> = [
        ("b-broken", "NotReady"),
        ("c-stale", "Stale"),
        ("d-noagent", "NoAgent"),
        ("a-ready", "Ready"),
    ]
    .into_iter()
    .map(|(name, state)| (format!("{name}-{test}"), state))
    .collect();
    assert_eq!(order, expected);
    assert!(
        lines[1].contains("broken") && lines[1].contains("GPU012, RDMA004"),
        "{}",
        lines[1]
    );
    assert!(out.contains("4 data path nodes: 1 ready, 1 not ready, 0 unknown, 1 stale, 1 without agent; 1 other nodes"), "{out}");
    // The real server's discovery has no zerohop.dev group.
    assert!(out.contains("no DataPathReport objects"), "{out}");
}

#[test]
fn json_and_by_check_use_the_report_objects_when_there_are_some() {
    let Some(plane) = ControlPlane::shared() else {
        return;
    };
    install_agent(plane);
    let test = cluster(plane);
    // b-broken's report object, as its agent applies it: server-side.
    let name = format!("b-broken-{test}");
    let report = json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": { "name": name },
        "node": name,
        "pass": { "intervalSeconds": 300 },
        "findings": [
            { "id": "RDMA004", "status": "fail" },
            { "id": "NFS001", "status": "fail" },
            { "id": "QOS001", "status": "warn" },
        ],
    });
    plane.apply(&report.to_string());
    let (code, out, err) = fleet_of(plane, &test, &["--format", "json"]);
    assert_eq!(code, Some(1), "{err}");
    let document: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["schema_version"], 1);
    assert_eq!(document["report_objects"], true);
    assert_eq!(document["summary"]["nodes"], 4);
    assert_eq!(document["summary"]["other_nodes"], 1);
    assert_eq!(document["nodes"][0]["name"], name.as_str());
    assert_eq!(
        document["nodes"][0]["failing"],
        json!(["NFS001", "RDMA004"])
    );
    assert_eq!(
        document["nodes"][0]["capabilities"]["gpudirect-rdma"],
        "broken"
    );
    assert_eq!(
        document["checks"],
        json!([{ "id": "NFS001", "nodes": [name] }, { "id": "RDMA004", "nodes": [name] }])
    );
    let (_, table, _) = fleet_of(plane, &test, &["--by-check"]);
    assert!(table.starts_with("CHECK"), "{table}");
    assert!(
        table.contains(&format!("RDMA004  1/2    {name}")),
        "{table}"
    );
}

#[test]
fn without_a_kubeconfig_fleet_says_which_file() {
    let (code, _, err) = fleet(&["--kubeconfig", "/no/such/kubeconfig"], LIMIT);
    assert_eq!(code, Some(2));
    assert!(err.contains("/no/such/kubeconfig"), "{err}");
}

#[test]
fn watch_shows_a_node_whose_agent_stopped_as_stale_without_any_change() {
    let Some(plane) = ControlPlane::shared() else {
        return;
    };
    let test = plane.unique_name("fleet");
    // A heartbeat written just now: ready, until three 1 s intervals pass
    // without another, which nothing in the cluster will announce.
    plane.create_all(vec![node(
        &test,
        "a-ready",
        gpu(),
        json!([condition("True", "DataPathReady", "no check fails", 0)]),
    )]);
    let selector = format!("zerohop-test={test}");
    let mut child = zerohop()
        .args(["fleet", "--watch", "--interval", "1s", "--format", "json"])
        .args(["-l", &selector])
        .arg("--kubeconfig")
        .arg(plane.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let first: Value =
        serde_json::from_str(&lines.recv_timeout(LIMIT).expect("a first view")).unwrap();
    assert_eq!(first["summary"]["ready"], 1, "{first}");
    let stale = loop {
        let line = lines
            .recv_timeout(LIMIT)
            .expect("a view while nothing changes");
        let view: Value = serde_json::from_str(&line).unwrap();
        if view["summary"]["stale"] == 1 {
            break view;
        }
    };
    assert_eq!(stale["summary"]["ready"], 0, "{stale}");
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let ended = agent_support::wait_until(Duration::from_secs(5), || {
        child.try_wait().unwrap().is_some()
    });
    assert!(ended, "fleet --watch ends on SIGINT");
    // A watch ends only by a signal: 128 + SIGINT, as every command.
    assert_eq!(child.wait().unwrap().code(), Some(130));
}
