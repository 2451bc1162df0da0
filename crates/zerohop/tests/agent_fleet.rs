//! The real `zerohop fleet` binary against an in-memory API server: the
//! states of nodes, pagination, selectors, the by-check view, JSON, the
//! exit codes and `--watch`.

#![cfg(feature = "cluster")]

mod agent_support;

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use agent_support::{fleet, node, now_minus, zerohop};
use serde_json::{Value, json};
use zerohop_testkit::fake_api_server::{FakeApiServer, Fault};

const LIMIT: Duration = Duration::from_secs(20);

fn condition(status: &str, reason: &str, message: &str, age: i64) -> Value {
    json!({
        "type": "zerohop.dev/DataPathReady",
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now_minus(age),
        "lastTransitionTime": now_minus(age + 3600),
    })
}

fn gpu() -> Value {
    json!({ "nvidia.com/gpu.present": "true" })
}

/// Five kinds of node: ready, not ready (two checks), stale, no agent, and
/// a plain node that is not part of the data path.
fn cluster() -> FakeApiServer {
    let api = FakeApiServer::start();
    api.put_node(node(
        "a-ready",
        gpu(),
        json!([condition("True", "DataPathReady", "no check fails", 10)]),
    ));
    api.put_node(node(
        "b-broken",
        json!({ "nvidia.com/gpu.present": "true", "zerohop.dev/gpudirect-rdma": "broken" }),
        json!([condition(
            "False",
            "RdmaPortDown",
            "RDMA004 mlx5_0/1: bring the port up; 2 failing: GPU012, RDMA004",
            20
        )]),
    ));
    api.put_node(node(
        "c-stale",
        gpu(),
        json!([condition("True", "DataPathReady", "no check fails", 3600)]),
    ));
    api.put_node(node("d-noagent", gpu(), json!([])));
    api.put_node(node(
        "e-plain",
        json!({ "kubernetes.io/os": "linux" }),
        json!([]),
    ));
    api
}

#[test]
fn every_node_gets_its_state_and_the_exit_code_says_not_all_are_ready() {
    let api = cluster();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let (code, out, err) = fleet(&["--kubeconfig", kubeconfig.to_str().unwrap()], LIMIT);
    assert_eq!(code, Some(1), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NODE"), "{out}");
    // Worst first: not ready, stale, no agent, then ready.
    let order: Vec<(&str, &str)> = lines[1..5]
        .iter()
        .map(|l| {
            let mut words = l.split_whitespace();
            (words.next().unwrap(), words.next().unwrap())
        })
        .collect();
    assert_eq!(
        order,
        [
            ("b-broken", "NotReady"),
            ("c-stale", "Stale"),
            ("d-noagent", "NoAgent"),
            ("a-ready", "Ready"),
        ]
    );
    assert!(
        lines[1].contains("broken") && lines[1].contains("GPU012, RDMA004"),
        "{}",
        lines[1]
    );
    assert!(out.contains("4 data path nodes: 1 ready, 1 not ready, 0 unknown, 1 stale, 1 without agent; 1 other nodes"), "{out}");
    assert!(out.contains("no DataPathReport objects"), "{out}");
}

#[test]
fn json_and_by_check_use_the_report_objects_when_there_are_some() {
    let api = cluster();
    api.set_report_crd(true);
    // The API server's view of b-broken's report object, as its agent applied it.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let report = json!({
        "apiVersion": "zerohop.dev/v1alpha1",
        "kind": "DataPathReport",
        "metadata": { "name": "b-broken" },
        "node": "b-broken",
        "pass": { "intervalSeconds": 300 },
        "findings": [
            { "id": "RDMA004", "status": "fail" },
            { "id": "NFS001", "status": "fail" },
            { "id": "QOS001", "status": "warn" },
        ],
    });
    apply_report(&api, &report);
    let (code, out, err) = fleet(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(code, Some(1), "{err}");
    let document: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(document["schema_version"], 1);
    assert_eq!(document["report_objects"], true);
    assert_eq!(document["summary"]["nodes"], 4);
    assert_eq!(document["summary"]["other_nodes"], 1);
    assert_eq!(document["nodes"][0]["name"], "b-broken");
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
        json!([{ "id": "NFS001", "nodes": ["b-broken"] }, { "id": "RDMA004", "nodes": ["b-broken"] }])
    );
    let (_, table, _) = fleet(
        &["--kubeconfig", kubeconfig.to_str().unwrap(), "--by-check"],
        LIMIT,
    );
    assert!(table.starts_with("CHECK"), "{table}");
    assert!(table.contains("RDMA004  1/2    b-broken"), "{table}");
}

fn apply_report(api: &FakeApiServer, report: &Value) {
    // Through the HTTP API, as the agent does.
    let name = report["metadata"]["name"].as_str().unwrap();
    let body = report.to_string();
    let address = api.url().trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    use std::io::{Read as _, Write as _};
    write!(
        stream,
        "PATCH /apis/zerohop.dev/v1alpha1/datapathreports/{name}?fieldManager=test HTTP/1.1\r\nHost: x\r\nContent-Type: application/apply-patch+yaml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn a_fleet_larger_than_a_page_is_listed_whole_and_a_selector_narrows_it() {
    let api = FakeApiServer::start();
    for i in 0..1203 {
        let labels = json!({ "nvidia.com/gpu.present": "true", "rack": format!("r{}", i % 3) });
        api.put_node(node(
            &format!("n{i:04}"),
            labels,
            json!([condition("True", "DataPathReady", "no check fails", 5)]),
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let (code, out, err) = fleet(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(code, Some(0), "{err}");
    let document: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(document["summary"]["ready"], 1203);
    let pages = api
        .requests()
        .iter()
        .filter(|r| r.uri.starts_with("/api/v1/nodes?"))
        .count();
    assert_eq!(pages, 3, "pages of 500");
    assert!(api.requests().iter().any(|r| r.uri.contains("limit=500")));
    let (code, out, _) = fleet(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--format",
            "json",
            "-l",
            "rack=r1",
        ],
        LIMIT,
    );
    assert_eq!(code, Some(0));
    let document: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(document["summary"]["nodes"], 401);
}

#[test]
fn refusals_and_bad_selectors_are_errors_that_say_what_to_do() {
    let api = cluster();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    api.inject(Fault {
        path_prefix: "/api/v1/nodes".into(),
        status: Some(403),
        times: Some(1),
        ..Fault::default()
    });
    let (code, _, err) = fleet(&["--kubeconfig", kubeconfig.to_str().unwrap()], LIMIT);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("403") && err.contains("zerohop-fleet-reader"),
        "{err}"
    );
    let (code, _, err) = fleet(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "-l",
            "a in (b)",
        ],
        LIMIT,
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("--selector"), "{err}");
    let (code, _, err) = fleet(&["--kubeconfig", "/no/such/kubeconfig"], LIMIT);
    assert_eq!(code, Some(2));
    assert!(err.contains("/no/such/kubeconfig"), "{err}");
}

#[test]
fn watch_shows_the_fleet_again_when_a_node_changes() {
    let api = cluster();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let mut child = zerohop()
        .args(["fleet", "--watch", "--format", "json", "--kubeconfig"])
        .arg(&kubeconfig)
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
    assert_eq!(first["summary"]["not_ready"], 1);
    // b-broken is fixed: its agent writes True.
    api.put_node(node(
        "b-broken",
        gpu(),
        json!([condition("True", "DataPathReady", "no check fails", 1)]),
    ));
    let fixed = loop {
        let line = lines.recv_timeout(LIMIT).expect("a view after the change");
        let view: Value = serde_json::from_str(&line).unwrap();
        if view["summary"]["not_ready"] == 0 {
            break view;
        }
    };
    assert_eq!(fixed["summary"]["ready"], 2);
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

#[test]
fn watch_shows_a_node_whose_agent_stopped_as_stale_without_any_change() {
    let api = FakeApiServer::start();
    // A heartbeat written just now: ready, until three 1 s intervals pass
    // without another, which nothing in the cluster will announce.
    api.put_node(node(
        "a-ready",
        gpu(),
        json!([condition("True", "DataPathReady", "no check fails", 0)]),
    ));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let mut child = zerohop()
        .args(["fleet", "--watch", "--interval", "1s", "--format", "json"])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
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
}
