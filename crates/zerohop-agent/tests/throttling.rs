//! The agent against a fake API server that refuses, throttles or lacks a
//! CRD, through the real client: the server's status reaches the logs and
//! metrics, `Retry-After` is honoured, a 503 costs one request and not a
//! burst, and one publisher's failures never hold back another's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::watch;
use zerohop_agent::metrics::{self, Format, Live};
use zerohop_agent::publisher::{self, Settings};
use zerohop_agent::snapshot::Snapshot;
use zerohop_cluster::api;
use zerohop_core::{Finding, Remediation, Report, Severity, Status};
use zerohop_testkit::fake_api_server::{FakeApiServer, Fault};

const CONDITION_PATH: &str = "/api/v1/nodes/n1/status";

async fn server_and_client() -> (FakeApiServer, kube::Client, tempfile::TempDir) {
    let server = FakeApiServer::start();
    server.put_node(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": "n1" }, "status": { "conditions": [] },
    }));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path());
    let client = api::client(Some(&kubeconfig), api::CALL_DEADLINE, false)
        .await
        .unwrap();
    (server, client, dir)
}

fn requests_to(server: &FakeApiServer, method: &str, path: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == method && r.uri.split('?').next() == Some(path))
        .count()
}

fn snapshot(sequence: u64, failing: bool) -> Arc<Snapshot> {
    let findings = if failing {
        vec![Finding {
            id: "RDMA004".into(),
            name: "rdma-port-down".into(),
            group: "rdma".into(),
            status: Status::Fail,
            severity: Severity::Error,
            subject: "mlx5_0/1".into(),
            message: "port 1 is DOWN".into(),
            evidence: vec![],
            remediation: Some(Remediation::new("bring the link up")),
            blocked_by: None,
            location: None,
            object: None,
        }]
    } else {
        vec![]
    };
    Arc::new(Snapshot::completed(
        "n1",
        sequence,
        k8s_openapi::jiff::Timestamp::now(),
        Duration::from_millis(200),
        Report::new("doctor", "/host", findings),
        Default::default(),
    ))
}

fn settings(report_object: bool) -> Settings {
    Settings {
        node: "n1".into(),
        interval: Duration::from_secs(300),
        condition: true,
        report_object,
    }
}

fn condition_status(server: &FakeApiServer) -> Option<String> {
    let node = server.node("n1")?;
    node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "zerohop.dev/DataPathReady")
        .and_then(|c| c["status"].as_str())
        .map(str::to_owned)
}

async fn wait_for(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < within, "{what} not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn served_metrics(live: &Live) -> String {
    let exposition = metrics::encode_live("n1", live);
    String::from_utf8(metrics::assemble(Format::Classic, &[&exposition])).unwrap()
}

#[tokio::test]
async fn a_429_keeps_its_status_and_retry_after_and_costs_one_request() {
    let (server, client, _dir) = server_and_client().await;
    server.inject(Fault {
        path_prefix: "/api/v1/nodes/n1".into(),
        times: Some(1),
        status: Some(429),
        retry_after: Some(7),
        ..Fault::default()
    });
    let started = Instant::now();
    let err = api::read_node(&client, "n1").await.unwrap_err();
    assert_eq!(err.code, Some(429), "{err}");
    assert_eq!(err.retry_after, Some(Duration::from_secs(7)), "{err}");
    assert!(err.to_string().contains("retry after 7s"), "{err}");
    assert!(!err.to_string().contains("no answer"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(requests_to(&server, "GET", "/api/v1/nodes/n1"), 1);
    // The next call is the caller's to make, and it succeeds.
    api::read_node(&client, "n1").await.unwrap();
}

#[tokio::test]
async fn a_503_without_retry_after_is_one_request_not_a_burst() {
    let (server, client, _dir) = server_and_client().await;
    server.inject(Fault {
        path_prefix: "/api/v1/nodes/n1".into(),
        status: Some(503),
        ..Fault::default()
    });
    let started = Instant::now();
    let err = api::read_node(&client, "n1").await.unwrap_err();
    assert_eq!(err.code, Some(503), "{err}");
    assert_eq!(err.retry_after, None);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(requests_to(&server, "GET", "/api/v1/nodes/n1"), 1);
}

#[tokio::test]
async fn a_503_on_every_write_is_retried_with_a_floor_and_counted_by_status() {
    let (server, client, _dir) = server_and_client().await;
    server.inject(Fault {
        method: Some("PATCH".into()),
        path_prefix: CONDITION_PATH.into(),
        status: Some(503),
        ..Fault::default()
    });
    let (_tx, rx) = watch::channel(Some(snapshot(1, true)));
    let live = Arc::new(Live::default());
    let task = tokio::spawn(publisher::run(
        client,
        settings(false),
        rx,
        Arc::clone(&live),
    ));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    task.abort();
    // Delays of 0.5–1 s, then 1–2 s: at most three writes in 2.5 s, where
    // kube's own retry layer sent eight in 1.6 s.
    let writes = requests_to(&server, "PATCH", CONDITION_PATH);
    assert!((2..=3).contains(&writes), "{writes} writes in 2.5 s");
    let text = served_metrics(&live);
    assert!(
        text.contains(&format!("call=\"condition\",code=\"503\"}} {writes}")),
        "{text}"
    );
}

#[tokio::test]
async fn the_servers_retry_after_holds_the_next_write_back() {
    let (server, client, _dir) = server_and_client().await;
    server.inject(Fault {
        method: Some("PATCH".into()),
        path_prefix: CONDITION_PATH.into(),
        times: Some(1),
        status: Some(429),
        retry_after: Some(2),
        ..Fault::default()
    });
    let (_tx, rx) = watch::channel(Some(snapshot(1, true)));
    let live = Arc::new(Live::default());
    let task = tokio::spawn(publisher::run(
        client,
        settings(false),
        rx,
        Arc::clone(&live),
    ));
    let started = Instant::now();
    wait_for("the first write", Duration::from_secs(5), || {
        requests_to(&server, "PATCH", CONDITION_PATH) == 1
    })
    .await;
    wait_for("the condition", Duration::from_secs(10), || {
        condition_status(&server).as_deref() == Some("False")
    })
    .await;
    // Our own back-off alone would have retried after 0.5–1 s.
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(requests_to(&server, "PATCH", CONDITION_PATH), 2);
    task.abort();
    let text = served_metrics(&live);
    assert!(
        text.contains("call=\"condition\",code=\"429\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_missing_report_crd_never_holds_back_the_condition() {
    let (server, client, _dir) = server_and_client().await;
    server.set_report_crd(false);
    let (tx, rx) = watch::channel(Some(snapshot(1, true)));
    let live = Arc::new(Live::default());
    let task = tokio::spawn(publisher::run(
        client,
        settings(true),
        rx,
        Arc::clone(&live),
    ));
    wait_for("the first condition", Duration::from_secs(5), || {
        condition_status(&server).as_deref() == Some("False")
    })
    .await;
    wait_for("a refused report", Duration::from_secs(5), || {
        requests_to(
            &server,
            "PATCH",
            "/apis/zerohop.dev/v1alpha1/datapathreports/n1",
        ) >= 1
    })
    .await;
    // The report object is now backing off; a new verdict is published at
    // once all the same.
    let changed = Instant::now();
    tx.send_replace(Some(snapshot(2, false)));
    wait_for("the new condition", Duration::from_secs(5), || {
        condition_status(&server).as_deref() == Some("True")
    })
    .await;
    assert!(
        changed.elapsed() < Duration::from_millis(400),
        "the condition waited {:?}",
        changed.elapsed()
    );
    assert!(server.report("n1").is_none());
    task.abort();
    let text = served_metrics(&live);
    assert!(
        text.contains("call=\"report_object\",code=\"404\"}"),
        "{text}"
    );
}

#[tokio::test]
async fn a_steady_node_costs_one_write_per_interval_not_two() {
    let (server, client, _dir) = server_and_client().await;
    server.set_report_crd(true);
    let (tx, rx) = watch::channel(Some(snapshot(1, true)));
    let live = Arc::new(Live::default());
    let task = tokio::spawn(publisher::run(
        client,
        settings(true),
        rx,
        Arc::clone(&live),
    ));
    let report_path = "/apis/zerohop.dev/v1alpha1/datapathreports/n1";
    wait_for("the first report", Duration::from_secs(5), || {
        server.report("n1").is_some()
    })
    .await;
    // Four more passes that find the same: the heartbeat is not due (a
    // 300 s interval) and the report says nothing new, so nothing is
    // written.
    for sequence in 2..=5 {
        tx.send_replace(Some(snapshot(sequence, true)));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(requests_to(&server, "PATCH", report_path), 1);
    assert_eq!(requests_to(&server, "PATCH", CONDITION_PATH), 1);
    // A pass that finds something else is written at once.
    tx.send_replace(Some(snapshot(6, false)));
    wait_for("the changed report", Duration::from_secs(5), || {
        requests_to(&server, "PATCH", report_path) == 2
    })
    .await;
    task.abort();
}
