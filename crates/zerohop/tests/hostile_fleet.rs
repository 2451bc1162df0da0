//! The real `zerohop fleet` against a hostile or broken API server: a
//! response larger than any real one, a server that never answers, a
//! kubeconfig that is a FIFO, terminal escapes in names and labels. Each
//! run has a deadline and is killed past it.

#![cfg(feature = "cluster")]

mod agent_support;

use std::time::{Duration, Instant};

use agent_support::{fleet, node};
use rustix::fs::{CWD, FileType, Mode, mknodat};
use serde_json::json;
use zerohop_testkit::fake_api_server::{FakeApiServer, Fault};

#[test]
fn a_response_larger_than_the_cap_is_refused_not_held() {
    let api = FakeApiServer::start();
    api.inject(Fault {
        path_prefix: "/api/v1/nodes".into(),
        huge_body: Some(80 << 20),
        ..Fault::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let (code, out, err) = fleet(
        &["--kubeconfig", kubeconfig.to_str().unwrap()],
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("length limit"), "{err}");
}

#[test]
fn a_server_that_never_answers_costs_one_request_timeout() {
    let api = FakeApiServer::start();
    api.inject(Fault {
        path_prefix: "/api/v1/nodes".into(),
        delay: Some(Duration::from_secs(600)),
        ..Fault::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let started = Instant::now();
    let (code, _, err) = fleet(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--request-timeout",
            "2s",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("no answer within 2s"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_kubeconfig_that_is_a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    mknodat(CWD, &path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
    let (code, _, err) = fleet(
        &["--kubeconfig", path.to_str().unwrap()],
        Duration::from_secs(10),
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn terminal_escapes_in_names_and_labels_are_shown_escaped() {
    let api = FakeApiServer::start();
    api.put_node(node(
        "evil\u{1b}]0;pwned\u{7}",
        json!({ "nvidia.com/gpu.present": "true", "zerohop.dev/gds": "ready\u{1b}[2J" }),
        json!([{
            "type": "zerohop.dev/DataPathReady", "status": "False",
            "reason": "X\u{1b}[31m", "message": "m; 1 failing: RDMA004",
            "lastHeartbeatTime": "2999-01-01T00:00:00Z", "lastTransitionTime": "2999-01-01T00:00:00Z",
        }]),
    ));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let (code, out, _) = fleet(
        &["--kubeconfig", kubeconfig.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(1));
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains(r"evil\x1b]0;pwned\x07"), "{out}");
    assert!(out.contains(r"ready\x1b[2J"), "{out}");
    let (_, by_check, _) = fleet(
        &["--kubeconfig", kubeconfig.to_str().unwrap(), "--by-check"],
        Duration::from_secs(20),
    );
    assert!(!by_check.contains('\u{1b}'), "{by_check:?}");
}
