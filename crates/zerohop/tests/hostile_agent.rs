//! The real `zerohop agent` under hostile conditions: a host read that
//! blocks forever, an API server that fails or never answers, FIFOs and
//! busy ports where files and addresses are expected. Every test bounds
//! the agent in time and kills it on the way out.

#![cfg(feature = "cluster")]

mod agent_support;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use agent_support::{Agent, copy_tree, fixture, node, wait_until, zerohop};
use rustix::fs::{CWD, FileType, Mode, mknodat};
use serde_json::json;
use zerohop_testkit::fake_api_server::{FakeApiServer, Fault};

fn fifo(path: &Path) {
    mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
}

/// The value of a sample line of the classic format, by its prefix.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn a_read_that_blocks_forever_is_cut_at_the_pass_deadline_and_the_agent_keeps_serving() {
    // /proc/cmdline is a FIFO with no writer: opening it blocks. A host
    // layer that refuses FIFOs ends the pass at once instead; either way
    // the agent must publish within the deadline and keep answering.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("host");
    copy_tree(&fixture("NFS001/pass-rdma"), &root);
    fifo(&root.join("proc/cmdline"));
    let mut agent = Agent::start(
        &[
            "--root",
            root.to_str().unwrap(),
            "--pass-timeout",
            "1s",
            "--interval",
            "2s",
            "--node-name",
            "n1",
        ],
        &[],
    );
    let started = Instant::now();
    // While the first pass may be blocked, the process answers at once.
    let health = agent.get("/healthz", None);
    assert_eq!(health.status, 200);
    // Generous for a loaded CI machine; a blocked agent would not answer at all.
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        wait_until(Duration::from_secs(4), || agent.get("/readyz", None).status
            == 200),
        "a pass is published within its deadline: {}",
        agent.log()
    );
    let metrics = agent.get("/metrics", None).body;
    let timed_out = sample(
        &metrics,
        "zerohop_passes_total{node=\"n1\",outcome=\"timed_out\"}",
    )
    .unwrap();
    let completed = sample(
        &metrics,
        "zerohop_passes_total{node=\"n1\",outcome=\"completed\"}",
    )
    .unwrap();
    assert_eq!(timed_out + completed, 1.0, "{metrics}");
    if timed_out == 1.0 {
        // The pass was cut: the judgement is unknown, the blocked thread is counted.
        assert!(metrics.contains("zerohop_data_path_status{node=\"n1\",status=\"Unknown\",reason=\"PassDidNotFinish\"} 1"), "{metrics}");
        assert_eq!(
            sample(&metrics, "zerohop_abandoned_passes{node=\"n1\"}"),
            Some(1.0)
        );
        assert_eq!(agent.get("/report", None).status, 503);
        // The next tick finds the first pass still blocked: skipped, not stacked.
        assert!(wait_until(Duration::from_secs(5), || {
            let text = agent.get("/metrics", None).body;
            sample(
                &text,
                "zerohop_passes_total{node=\"n1\",outcome=\"skipped\"}",
            ) >= Some(1.0)
        }));
        assert_eq!(
            sample(
                &agent.get("/metrics", None).body,
                "zerohop_abandoned_passes{node=\"n1\"}"
            ),
            Some(1.0),
            "one blocked thread, not one per interval"
        );
    }
    let (status, took) = agent
        .terminate(Duration::from_secs(2))
        .expect("SIGTERM ends the agent even with a read blocked");
    // 128 + SIGTERM, as every command exits on it.
    assert!(
        status.code() == Some(143) && took < Duration::from_secs(2),
        "{status:?}"
    );
}

#[test]
fn api_errors_back_off_and_never_end_the_agent() {
    let api = FakeApiServer::start();
    api.put_node(node("n1", json!({}), json!([])));
    api.inject(Fault {
        method: Some("PATCH".into()),
        path_prefix: "/api/v1/nodes/n1/status".into(),
        status: Some(500),
        ..Fault::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let mut agent = Agent::start(
        &[
            "--root",
            fixture("NFS001/pass-rdma").to_str().unwrap(),
            "--interval",
            "1s",
            "--node-condition",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
        &[("NODE_NAME", "n1")],
    );
    std::thread::sleep(Duration::from_secs(5));
    let patches = api
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH")
        .count();
    // Back-off from 1 s, doubling: a handful of tries in five seconds, not
    // one per pass and not a tight loop.
    assert!((2..=5).contains(&patches), "{patches} tries");
    let metrics = agent.get("/metrics", None).body;
    assert!(
        sample(
            &metrics,
            "zerohop_api_requests_total{node=\"n1\",call=\"condition\",outcome=\"error\"}"
        ) >= Some(2.0),
        "{metrics}"
    );
    assert!(
        sample(
            &metrics,
            "zerohop_passes_total{node=\"n1\",outcome=\"completed\"}"
        ) >= Some(3.0)
    );
    assert!(agent.log().contains("kubernetes api call failed"));
    // The server recovers; the next retry writes the condition.
    api.clear_faults();
    assert!(wait_until(Duration::from_secs(15), || {
        api.node("n1").is_some_and(|n| {
            n["status"]["conditions"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
        })
    }));
    agent.terminate(Duration::from_secs(2)).expect("exits");
}

#[test]
fn an_api_server_that_never_answers_stops_neither_passes_nor_metrics() {
    let api = FakeApiServer::start();
    api.put_node(node("n1", json!({}), json!([])));
    api.inject(Fault {
        path_prefix: "/".into(),
        delay: Some(Duration::from_secs(600)),
        ..Fault::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let mut agent = Agent::start(
        &[
            "--root",
            fixture("NFS001/pass-rdma").to_str().unwrap(),
            "--interval",
            "1s",
            "--node-condition",
            "--report-object",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
        &[("NODE_NAME", "n1")],
    );
    assert!(wait_until(Duration::from_secs(10), || {
        sample(
            &agent.get("/metrics", None).body,
            "zerohop_passes_total{node=\"n1\",outcome=\"completed\"}",
        ) >= Some(3.0)
    }));
    let started = Instant::now();
    assert_eq!(agent.get("/readyz", None).status, 200);
    assert!(started.elapsed() < Duration::from_secs(3));
    let (status, took) = agent.terminate(Duration::from_secs(2)).expect("exits");
    // 128 + SIGTERM, as every command exits on it.
    assert!(
        status.code() == Some(143) && took < Duration::from_secs(2),
        "{status:?}"
    );
}

#[test]
fn fifos_and_busy_ports_are_refused_at_start_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let features = dir.path().join("features.d");
    fifo(&features);
    let profile = dir.path().join("profile.yaml");
    fifo(&profile);
    let kubeconfig = dir.path().join("kubeconfig");
    fifo(&kubeconfig);
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_address = busy.local_addr().unwrap().to_string();
    let loopback = ["--listen", "127.0.0.1:0"];
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                loopback[0],
                loopback[1],
                "--features-dir",
                features.to_str().unwrap(),
            ],
            "not a directory",
        ),
        (
            &[
                loopback[0],
                loopback[1],
                "--profile",
                profile.to_str().unwrap(),
            ],
            "not a regular file",
        ),
        (
            &[
                loopback[0],
                loopback[1],
                "--node-condition",
                "--node-name",
                "n1",
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
            ],
            "not a regular file",
        ),
        (&["--listen", &busy_address], "cannot listen"),
    ];
    for (args, expected) in cases {
        let started = Instant::now();
        let out = zerohop()
            .arg("agent")
            .args(["--root", fixture("NFS001/pass-rdma").to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?}");
    }
}
