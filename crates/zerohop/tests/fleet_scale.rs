//! `zerohop fleet` over a large cluster of realistic GPU nodes, against
//! the in-memory API server: each Node some 20 KB as a GPU node's is
//! (150 NFD labels, 20 annotations, 50 container images, the kubelet's
//! conditions and managed fields), each with its `DataPathReport`.
//!
//! The default run checks the answer on 1,000 nodes; the measurement on
//! 10,000 (`BENCHMARKS.md`, "fleet over many realistic GPU nodes") is
//! `FLEET_NODES=10000 cargo test --release -p zerohop --test fleet_scale
//! -- --ignored --nocapture`, which prints the wall time, the CPU time
//! (user and system) and the peak resident memory of the `fleet` process
//! from `/usr/bin/time`: the rest of the wall time is the API server's
//! (in this test's process) and the wait between the two.

#![cfg(feature = "cluster")]

mod agent_support;

use std::time::{Duration, Instant};

use agent_support::now_minus;
use serde_json::{Value, json};
use zerohop_testkit::fake_api_server::FakeApiServer;

/// One node in fifty fails a check.
fn is_broken(index: usize) -> bool {
    index.is_multiple_of(50)
}

/// A GPU node as the kubelet, NFD and the GPU operator leave it.
fn realistic_node(index: usize, heartbeat: &str) -> Value {
    let name = format!("gpu-{index:05}.cluster.example.com");
    let mut labels = serde_json::Map::new();
    labels.insert("nvidia.com/gpu.present".into(), json!("true"));
    labels.insert("kubernetes.io/hostname".into(), json!(name));
    labels.insert("zerohop.dev/gpudirect-rdma".into(), json!("ready"));
    for i in 0..147 {
        labels.insert(
            format!("feature.node.kubernetes.io/cpu-cpuid.FEATURE{i:03}"),
            json!("true"),
        );
    }
    let mut annotations = serde_json::Map::new();
    for i in 0..20 {
        annotations.insert(
            format!("nfd.node.kubernetes.io/annotation-{i:02}"),
            json!("x".repeat(20)),
        );
    }
    let images: Vec<Value> = (0..50)
        .map(|i| {
            json!({
                "names": [
                    format!("nvcr.io/nvidia/cloud-native/image-{i:02}@sha256:{}", "ab".repeat(32)),
                    format!("nvcr.io/nvidia/cloud-native/image-{i:02}:v24.9.{i}"),
                ],
                "sizeBytes": 1_234_567_890 + i,
            })
        })
        .collect();
    let kubelet = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"].map(|t| {
        json!({ "type": t, "status": if t == "Ready" { "True" } else { "False" },
                "reason": format!("Kubelet{t}"), "message": "kubelet is posting ready status",
                "lastHeartbeatTime": heartbeat, "lastTransitionTime": "2026-01-01T00:00:00Z" })
    });
    let mut conditions: Vec<Value> = kubelet.into();
    let broken = is_broken(index);
    conditions.push(json!({
        "type": "zerohop.dev/DataPathReady",
        "status": if broken { "False" } else { "True" },
        "reason": if broken { "RdmaPortDown" } else { "DataPathReady" },
        "message": if broken { "RDMA004 mlx5_0/1: bring the link up; 1 failing: RDMA004" } else { "no check fails" },
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }));
    let managed: Vec<Value> = ["kubelet", "nfd-master", "gpu-operator", "zerohop-agent"]
        .iter()
        .map(|m| {
            json!({ "manager": m, "operation": "Apply", "apiVersion": "v1",
                    "time": heartbeat, "fieldsType": "FieldsV1",
                    "fieldsV1": { "f:metadata": { "f:labels": { "x": "y".repeat(60) } } } })
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": annotations,
            "managedFields": managed,
        },
        "spec": { "podCIDR": "10.0.0.0/24", "providerID": format!("baremetal://{name}") },
        "status": {
            "capacity": { "cpu": "128", "memory": "2113455968Ki", "nvidia.com/gpu": "8",
                          "rdma/rdma_shared_device_a": "63", "pods": "110" },
            "allocatable": { "cpu": "127", "memory": "2113353568Ki", "nvidia.com/gpu": "8",
                             "rdma/rdma_shared_device_a": "63", "pods": "110" },
            "conditions": conditions,
            "addresses": [{ "type": "InternalIP", "address": "10.1.2.3" },
                          { "type": "Hostname", "address": name }],
            "nodeInfo": { "kernelVersion": "6.8.0-48-generic", "osImage": "Ubuntu 24.04.1 LTS",
                          "containerRuntimeVersion": "containerd://1.7.22",
                          "kubeletVersion": "v1.31.2", "architecture": "amd64",
                          "machineID": "0".repeat(32), "systemUUID": "0".repeat(36),
                          "bootID": "0".repeat(36), "operatingSystem": "linux",
                          "kubeProxyVersion": "" },
            "images": images,
        },
    })
}

fn report(index: usize) -> Value {
    let name = format!("gpu-{index:05}.cluster.example.com");
    let findings = if is_broken(index) {
        json!([{ "id": "RDMA004", "name": "rdma-port-down", "group": "rdma", "status": "fail",
                 "subject": "mlx5_0/1", "message": "port 1 is DOWN", "fix": "bring the link up" }])
    } else {
        json!([{ "id": "QOS001", "name": "pfc-off", "group": "qos", "status": "warn",
                 "subject": "mlx5_0", "message": "PFC is off on priority 3" }])
    };
    json!({
        "apiVersion": "zerohop.dev/v1alpha1",
        "kind": "DataPathReport",
        "metadata": { "name": name },
        "node": name,
        "condition": { "status": "True", "reason": "DataPathReady", "message": "no check fails" },
        "pass": { "finishedAt": "2026-01-01T00:00:00Z", "durationSeconds": 0.4,
                  "intervalSeconds": 300, "zerohopVersion": "0.1.0" },
        "summary": { "pass": 180, "info": 3, "warn": 1, "fail": 0, "unknown": 2,
                     "notApplicable": 40, "blocked": 0 },
        "findings": findings,
        "omittedFindings": 0,
    })
}

fn cluster(nodes: usize) -> FakeApiServer {
    let api = FakeApiServer::start();
    api.set_report_crd(true);
    let heartbeat = now_minus(0);
    for index in 0..nodes {
        api.put_node(realistic_node(index, &heartbeat));
        api.put_report(report(index));
    }
    api
}

/// What `/usr/bin/time` says of one `fleet`.
struct Measured {
    wall: Duration,
    /// User and system CPU seconds.
    user: f64,
    system: f64,
    maxrss_kib: u64,
}

/// The value of `name=` in `/usr/bin/time`'s line.
fn field<T: std::str::FromStr>(err: &str, name: &str) -> T {
    err.lines()
        .rfind(|l| l.starts_with("maxrss_kib="))
        .and_then(|line| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} from /usr/bin/time: {err}"))
}

/// Runs `fleet --format json` under `/usr/bin/time`; returns the document
/// and what it cost.
fn measured_fleet(api: &FakeApiServer) -> (Value, Measured) {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let started = Instant::now();
    // ZEROHOP=path measures another build, the one before a change say.
    let binary =
        std::env::var_os("ZEROHOP").unwrap_or_else(|| env!("CARGO_BIN_EXE_zerohop").into());
    let output = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kib=%M user_s=%U system_s=%S"])
        .arg(binary)
        .args(["fleet", "--format", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    let wall = started.elapsed();
    let err = String::from_utf8_lossy(&output.stderr);
    let measured = Measured {
        wall,
        user: field(&err, "user_s"),
        system: field(&err, "system_s"),
        maxrss_kib: field(&err, "maxrss_kib"),
    };
    let document = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not a JSON document ({e}): {err}"));
    (document, measured)
}

fn check(document: &Value, nodes: usize) {
    assert_eq!(
        document["summary"]["nodes"], nodes,
        "{}",
        document["summary"]
    );
    assert_eq!(document["summary"]["not_ready"], nodes.div_ceil(50));
    assert_eq!(document["summary"]["ready"], nodes - nodes.div_ceil(50));
    assert_eq!(document["summary"]["stale"], 0);
    assert_eq!(document["nodes"][0]["failing"], json!(["RDMA004"]));
    assert_eq!(
        document["nodes"][0]["capabilities"]["gpudirect-rdma"], "ready",
        "{}",
        document["nodes"][0]
    );
}

#[test]
fn a_thousand_realistic_nodes_are_read_whole_and_right() {
    if !std::path::Path::new("/usr/bin/time").exists() {
        eprintln!("skipped: no /usr/bin/time to measure with");
        return;
    }
    let node = realistic_node(1, "2026-01-01T00:00:00Z");
    let size = node.to_string().len();
    assert!((19_000..23_000).contains(&size), "a node of {size} bytes");
    let api = cluster(1000);
    let (document, _) = measured_fleet(&api);
    check(&document, 1000);
}

#[test]
#[ignore = "a measurement: FLEET_NODES=10000 cargo test --release -p zerohop --test fleet_scale -- --ignored --nocapture"]
fn fleet_over_many_realistic_nodes() {
    let nodes: usize = std::env::var("FLEET_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let api = cluster(nodes);
    for run in 1..=3 {
        let (document, measured) = measured_fleet(&api);
        check(&document, nodes);
        println!(
            "run {run}: {nodes} nodes, {:.2} s wall, fleet CPU {:.2} s user + {:.2} s system, \
             peak RSS {:.1} MB",
            measured.wall.as_secs_f64(),
            measured.user,
            measured.system,
            measured.maxrss_kib as f64 * 1024.0 / 1e6
        );
    }
}

/// `fleet --watch` keeps each Node of its reflector as slim as a list's
/// page does: the peak memory once it has shown the first two views (its
/// one-shot list, then the reflectors' own).
#[test]
#[ignore = "a measurement: FLEET_NODES=10000 cargo test --release -p zerohop --test fleet_scale fleet_watch -- --ignored --nocapture"]
fn fleet_watch_over_many_realistic_nodes() {
    let nodes: usize = std::env::var("FLEET_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let api = cluster(nodes);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let started = Instant::now();
    let binary =
        std::env::var_os("ZEROHOP").unwrap_or_else(|| env!("CARGO_BIN_EXE_zerohop").into());
    let mut time = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kib=%M user_s=%U system_s=%S"])
        .arg(binary)
        .args(["fleet", "--watch", "--format", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = time.stdout.take().unwrap();
    let (views, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout).lines() {
            if views.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    for view in 1..=2 {
        let Ok(line) = seen.recv_timeout(Duration::from_secs(300)) else {
            let _ = time.kill();
            panic!("no view {view} within 300 s");
        };
        check(&serde_json::from_str(&line).unwrap(), nodes);
        println!("view {view} after {:.2} s", started.elapsed().as_secs_f64());
    }
    // SIGTERM to `fleet`, the child of `/usr/bin/time`, which then reports.
    let children =
        std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", time.id())).unwrap();
    let fleet = children.split_whitespace().next().expect("fleet runs");
    let sent = std::process::Command::new("kill")
        .args(["-TERM", fleet])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = time.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    let rss: u64 = field(&err, "maxrss_kib");
    let cpu: f64 = field::<f64>(&err, "user_s") + field::<f64>(&err, "system_s");
    println!(
        "fleet --watch: {nodes} nodes, CPU {cpu:.2} s, peak RSS {:.1} MB",
        rss as f64 * 1024.0 / 1e6
    );
}
