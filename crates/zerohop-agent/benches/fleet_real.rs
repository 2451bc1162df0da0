//! `zerohop fleet` against the real kube-apiserver and etcd
//! (`tools/control-plane`), over many realistic GPU nodes: its wall time,
//! its CPU, its peak resident memory and the requests each look costs the
//! API server, next to `kubectl get nodes -o json` on the same cluster in
//! the same run. Run by hand (never by `cargo test`):
//!
//! ```sh
//! CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
//!   cargo bench -p zerohop-agent --bench fleet_real
//! ```
//!
//! It starts a plane of its own, installs the `DataPathReport` CRD from
//! the agent's manifests and creates `FLEET_NODES` (10,000) Nodes shaped
//! as a GPU node's object is (some 20 KB each: ~150 NFD and GPU operator
//! labels, annotations, 50 container images, the kubelet's conditions,
//! capacity and allocatable, addresses, node info), four in five with the
//! agent's `zerohop.dev/DataPathReady` condition and a `DataPathReport`
//! (one of those in forty not ready, failing RDMA004), the fifth without an
//! agent; created by 32 concurrent requests of one client, not a process
//! each. Then, `FLEET_RUNS` (5) times in turn: `fleet --format json` and
//! `kubectl get nodes -o json`, each under `/usr/bin/time`, with the API
//! server's `apiserver_request_total` and `apiserver_response_sizes_sum`
//! read from its `/metrics` before and after each; then `FLEET_WATCH_RUNS`
//! (2) runs of `fleet --watch`, stopped with SIGTERM after its first view
//! (its reflectors' lists done). Every answer of `fleet` is checked against
//! the nodes created.
//!
//! `fleet` is this bench's own executable calling
//! `zerohop_agent::fleet::run`, what `zerohop fleet` calls after parsing its
//! arguments; `ZEROHOP=path` measures a built `zerohop` binary instead.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use zerohop_agent::fleet::{self, OutputFormat};
use zerohop_plan::{AgentPlan, Platform};
use zerohop_testkit::control_plane::ControlPlane;

/// Set in the environment of the bench's own `fleet` child: the
/// kubeconfig it reads.
const CHILD: &str = "ZEROHOP_FLEET_BENCH_KUBECONFIG";
/// Set (to anything) for a child that runs `fleet --watch`.
const CHILD_WATCH: &str = "ZEROHOP_FLEET_BENCH_WATCH";

fn main() {
    if let Some(kubeconfig) = std::env::var_os(CHILD) {
        std::process::exit(child(PathBuf::from(kubeconfig)));
    }
    // `cargo bench` passes `--bench`; `cargo test --all-targets`, which
    // runs a bench's main too, does not, and must not start minutes of
    // measurement.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "fleet_real measures only under `cargo bench` (see its header); nothing measured"
        );
        return;
    }
    let nodes = env_number("FLEET_NODES", 10_000);
    let runs = env_number("FLEET_RUNS", 5);
    let watch_runs = env_number("FLEET_WATCH_RUNS", 2);
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("no /usr/bin/time to measure with; nothing measured");
        return;
    }
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    println!("machine: {}", machine());
    println!(
        "kube-apiserver {}",
        plane
            .kubectl_ok(&["version", "-o", "json"], None)
            .lines()
            .find(|l| l.contains("gitVersion"))
            .unwrap_or_default()
            .trim()
    );
    install_crd(&plane);
    let started = Instant::now();
    populate(&plane, nodes);
    println!(
        "created {nodes} nodes and {} reports in {:.1} s; a node is {} bytes of compact JSON, \
         a report {}",
        with_agent(nodes),
        started.elapsed().as_secs_f64(),
        served_size(&plane, "node"),
        served_size(&plane, "datapathreport")
    );

    let names = plane.kubectl_ok(&["get", "nodes", "-o", "name"], None);
    assert_eq!(names.lines().count(), nodes, "the server holds every node");

    let mut fleets = Vec::new();
    let mut kubectls = Vec::new();
    for run in 1..=runs {
        let before = Counters::read(&plane);
        let (measured, out) = measure(fleet_command(&plane.kubeconfig(), false));
        let after = Counters::read(&plane);
        check(
            &serde_json::from_slice(&out).expect("a JSON document"),
            nodes,
        );
        let cost = after.minus(&before);
        println!(
            "run {run} fleet:   {measured}; {cost}; load {}",
            load_average()
        );
        fleets.push((measured, cost));

        let before = Counters::read(&plane);
        let mut kubectl = plane.kubectl();
        kubectl.args(["get", "nodes", "-o", "json"]);
        let (measured, _) = measure(kubectl);
        let after = Counters::read(&plane);
        let cost = after.minus(&before);
        println!(
            "run {run} kubectl: {measured}; {cost}; load {}",
            load_average()
        );
        kubectls.push((measured, cost));
    }
    println!("median of {runs} fleet:   {}", Median(&fleets));
    println!("median of {runs} kubectl: {}", Median(&kubectls));

    for run in 1..=watch_runs {
        let before = Counters::read(&plane);
        let watched = watch(&plane.kubeconfig(), nodes);
        let after = Counters::read(&plane);
        println!(
            "watch run {run}: first view after {:.2} s; {}; {}",
            watched.first.as_secs_f64(),
            watched.measured,
            after.minus(&before)
        );
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The child: one `fleet` as `zerohop fleet` runs it, on standard output.
fn child(kubeconfig: PathBuf) -> i32 {
    let options = fleet::Options {
        kubeconfig: Some(kubeconfig),
        selector: None,
        watch: std::env::var_os(CHILD_WATCH).is_some(),
        by_check: false,
        format: OutputFormat::Json,
        interval: Duration::from_secs(300),
        request_timeout: Duration::from_secs(30),
    };
    let mut out = std::io::stdout().lock();
    match fleet::run(&options, &mut out) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            2
        }
    }
}

/// `fleet --format json` (with `--watch` when `watch`), under
/// `/usr/bin/time`.
fn fleet_command(kubeconfig: &Path, watch: bool) -> Command {
    let mut command = Command::new("/usr/bin/time");
    command.args(["-f", TIME_FORMAT]);
    match std::env::var_os("ZEROHOP") {
        Some(binary) => {
            command
                .arg(binary)
                .args(["fleet", "--format", "json", "--kubeconfig"])
                .arg(kubeconfig);
            if watch {
                command.arg("--watch");
            }
        }
        None => {
            command
                .arg(std::env::current_exe().expect("this executable"))
                .env(CHILD, kubeconfig);
            if watch {
                command.env(CHILD_WATCH, "1");
            }
        }
    }
    command.env_remove("KUBECONFIG");
    command
}

/// What `/usr/bin/time` prints last, on its own line.
const TIME_FORMAT: &str = "zerohop-bench-time wall_s=%e user_s=%U system_s=%S maxrss_kib=%M";

/// What one process cost.
#[derive(Debug, Clone, Copy)]
struct Measured {
    wall: f64,
    user: f64,
    system: f64,
    maxrss_kib: u64,
}

impl std::fmt::Display for Measured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.2} s wall, CPU {:.2} s user + {:.2} s system, peak RSS {:.1} MB",
            self.wall,
            self.user,
            self.system,
            self.maxrss_kib as f64 * 1024.0 / 1e6
        )
    }
}

impl Measured {
    /// From `/usr/bin/time`'s line in `stderr`; `wall` measured here.
    fn parse(stderr: &str, wall: f64) -> Measured {
        let line = stderr
            .lines()
            .rfind(|l| l.starts_with("zerohop-bench-time "))
            .unwrap_or_else(|| panic!("no line from /usr/bin/time: {stderr}"));
        let field = |name: &str| -> f64 {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in {line}"))
        };
        Measured {
            wall,
            user: field("user_s"),
            system: field("system_s"),
            maxrss_kib: field("maxrss_kib") as u64,
        }
    }
}

/// Runs `command` under `/usr/bin/time` (`fleet_command` already is) and
/// returns what it cost and its standard output, which `kubectl` (its
/// output to be thrown away) writes to nowhere.
fn measure(command: Command) -> (Measured, Vec<u8>) {
    let mut command = if command.get_program() == "/usr/bin/time" {
        command
    } else {
        let mut timed = Command::new("/usr/bin/time");
        timed.args(["-f", TIME_FORMAT]).arg(command.get_program());
        timed.args(command.get_args());
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => timed.env(key, value),
                None => timed.env_remove(key),
            };
        }
        // 10,000 Nodes printed as JSON are some 400 MB.
        timed.stdout(Stdio::null());
        timed
    };
    let started = Instant::now();
    let output = command.output().expect("the command runs");
    let wall = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.code().is_some_and(|code| code <= 1),
        "{:?} failed: {stderr}",
        command
    );
    (Measured::parse(&stderr, wall), output.stdout)
}

/// What one `fleet --watch` cost: when its first view came, and the
/// process.
struct Watched {
    first: Duration,
    measured: Measured,
}

fn watch(kubeconfig: &Path, nodes: usize) -> Watched {
    let started = Instant::now();
    let mut time = fleet_command(kubeconfig, true)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fleet --watch starts");
    let stdout = time.stdout.take().expect("a piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .next()
        .expect("a view")
        .expect("a line of standard output");
    let first = started.elapsed();
    check(&serde_json::from_str(&line).expect("a JSON view"), nodes);
    // SIGTERM to the child of /usr/bin/time, which then reports.
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", time.id()))
        .expect("the children of /usr/bin/time");
    let child = children.split_whitespace().next().expect("fleet runs");
    let sent = Command::new("kill")
        .args(["-TERM", child])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    drop(lines);
    let output = time.wait_with_output().expect("fleet --watch ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    Watched {
        first,
        measured: Measured::parse(&stderr, started.elapsed().as_secs_f64()),
    }
}

/// The medians of runs' figures.
struct Median<'a>(&'a [(Measured, Cost)]);

impl std::fmt::Display for Median<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let median = |value: &dyn Fn(&(Measured, Cost)) -> f64| -> f64 {
            let mut values: Vec<f64> = self.0.iter().map(value).collect();
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        write!(
            f,
            "{:.2} s wall, CPU {:.2} + {:.2} s, peak RSS {:.1} MB, {} + {} list requests, \
             {:.1} + {:.1} MB served, API server CPU {:.2} s",
            median(&|r| r.0.wall),
            median(&|r| r.0.user),
            median(&|r| r.0.system),
            median(&|r| r.0.maxrss_kib as f64) * 1024.0 / 1e6,
            median(&|r| r.1.node_lists),
            median(&|r| r.1.report_lists),
            median(&|r| r.1.node_bytes) / 1e6,
            median(&|r| r.1.report_bytes) / 1e6,
            median(&|r| r.1.server_cpu),
        )
    }
}

/// The API server's counters of what it served.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    node_lists: f64,
    node_watches: f64,
    report_lists: f64,
    report_watches: f64,
    /// Bytes of LIST and WATCH answers of nodes, as written (compressed,
    /// for a client that asks for gzip).
    node_bytes: f64,
    /// The same of reports.
    report_bytes: f64,
    /// The API server's CPU seconds (`process_cpu_seconds_total`).
    server_cpu: f64,
}

struct Counters(Cost);

impl Counters {
    /// `apiserver_request_total` and `apiserver_response_sizes_sum` of
    /// nodes and `datapathreports`, every code summed, from `/metrics`.
    fn read(plane: &ControlPlane) -> Counters {
        let text = plane.kubectl_ok(&["get", "--raw", "/metrics"], None);
        let mut cost = Cost::default();
        for line in text.lines() {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let nodes =
                series.contains("resource=\"nodes\"") && series.contains("subresource=\"\"");
            let reports = series.contains("resource=\"datapathreports\"");
            let list = series.contains("verb=\"LIST\"");
            let watch = series.contains("verb=\"WATCH\"");
            if series == "process_cpu_seconds_total" {
                cost.server_cpu = value;
            } else if series.starts_with("apiserver_request_total{") {
                match (nodes, reports, list, watch) {
                    (true, _, true, _) => cost.node_lists += value,
                    (true, _, _, true) => cost.node_watches += value,
                    (_, true, true, _) => cost.report_lists += value,
                    (_, true, _, true) => cost.report_watches += value,
                    _ => {}
                }
            } else if series.starts_with("apiserver_response_sizes_sum{")
                && (nodes || reports)
                && (list || watch)
            {
                if nodes {
                    cost.node_bytes += value;
                } else {
                    cost.report_bytes += value;
                }
            }
        }
        Counters(cost)
    }

    fn minus(&self, before: &Counters) -> Cost {
        Cost {
            node_lists: self.0.node_lists - before.0.node_lists,
            node_watches: self.0.node_watches - before.0.node_watches,
            report_lists: self.0.report_lists - before.0.report_lists,
            report_watches: self.0.report_watches - before.0.report_watches,
            node_bytes: self.0.node_bytes - before.0.node_bytes,
            report_bytes: self.0.report_bytes - before.0.report_bytes,
            server_cpu: self.0.server_cpu - before.0.server_cpu,
        }
    }
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "requests: {} LIST + {} WATCH of nodes, {} LIST + {} WATCH of reports; {:.1} + {:.1} MB \
             served; API server CPU {:.2} s",
            self.node_lists,
            self.node_watches,
            self.report_lists,
            self.report_watches,
            self.node_bytes / 1e6,
            self.report_bytes / 1e6,
            self.server_cpu
        )
    }
}

/// Whether node `index` runs the agent: four in five.
fn has_agent(index: usize) -> bool {
    index % 5 != 4
}

/// Whether node `index`'s agent finds a failing check: one in fifty
/// indices, all of them among the nodes with an agent.
fn is_broken(index: usize) -> bool {
    index.is_multiple_of(50)
}

fn with_agent(nodes: usize) -> usize {
    (0..nodes).filter(|i| has_agent(*i)).count()
}

fn node_name(index: usize) -> String {
    format!("gpu-{index:05}.cluster.example.com")
}

/// The answer of every `fleet` is the fleet created.
fn check(document: &Value, nodes: usize) {
    let summary = &document["summary"];
    let agents = with_agent(nodes);
    let broken = (0..nodes).filter(|i| is_broken(*i)).count();
    assert_eq!(summary["nodes"], nodes, "{summary}");
    assert_eq!(summary["no_agent"], nodes - agents, "{summary}");
    assert_eq!(summary["not_ready"], broken, "{summary}");
    assert_eq!(summary["ready"], agents - broken, "{summary}");
    assert_eq!(summary["stale"], 0, "{summary}");
    assert_eq!(document["report_objects"], true);
    assert_eq!(document["nodes"][0]["failing"], json!(["RDMA004"]));
}

/// The time now, as the API server writes it.
fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A GPU node as the kubelet, NFD and the GPU operator leave it.
fn realistic_node(index: usize, heartbeat: &str) -> Value {
    let name = node_name(index);
    let mut labels = serde_json::Map::new();
    for (key, value) in [
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("kubernetes.io/os", "linux"),
        ("node.kubernetes.io/instance-type", "bare-metal-h100x8"),
        ("topology.kubernetes.io/region", "eu-west"),
        ("node-role.kubernetes.io/worker", ""),
        ("nvidia.com/gpu.present", "true"),
        ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
        ("nvidia.com/gpu.count", "8"),
        ("nvidia.com/gpu.memory", "81559"),
        ("nvidia.com/gpu.family", "hopper"),
        ("nvidia.com/cuda.driver.major", "550"),
        ("nvidia.com/cuda.driver.minor", "90"),
        ("nvidia.com/cuda.driver.rev", "07"),
        ("nvidia.com/cuda.runtime.major", "12"),
        ("nvidia.com/cuda.runtime.minor", "4"),
        ("nvidia.com/mig.capable", "true"),
        ("nvidia.com/gpu.deploy.driver", "true"),
        ("nvidia.com/gpu.deploy.device-plugin", "true"),
        ("nvidia.com/gpu.deploy.dcgm-exporter", "true"),
        ("feature.node.kubernetes.io/pci-10de.present", "true"),
        ("feature.node.kubernetes.io/pci-15b3.present", "true"),
        ("feature.node.kubernetes.io/rdma.available", "true"),
        ("feature.node.kubernetes.io/rdma.capable", "true"),
        (
            "feature.node.kubernetes.io/kernel-version.full",
            "6.8.0-48-generic",
        ),
        ("feature.node.kubernetes.io/system-os_release.ID", "ubuntu"),
        (
            "feature.node.kubernetes.io/system-os_release.VERSION_ID",
            "24.04",
        ),
    ] {
        labels.insert(key.into(), json!(value));
    }
    labels.insert("kubernetes.io/hostname".into(), json!(name));
    labels.insert(
        "topology.kubernetes.io/zone".into(),
        json!(format!("eu-west-{}", index % 3)),
    );
    for i in 0..120 {
        labels.insert(
            format!("feature.node.kubernetes.io/cpu-cpuid.FEATURE{i:03}"),
            json!("true"),
        );
    }
    if has_agent(index) {
        let state = if is_broken(index) { "broken" } else { "ready" };
        for capability in ["gpudirect-rdma", "nfs-rdma", "gds"] {
            labels.insert(format!("zerohop.dev/{capability}"), json!(state));
        }
    }
    let annotations = json!({
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "csi.volume.kubernetes.io/nodeid": format!("{{\"nfs.csi.k8s.io\":\"{name}\"}}"),
        "nfd.node.kubernetes.io/feature-labels": (0..120)
            .map(|i| format!("cpu-cpuid.FEATURE{i:03}"))
            .collect::<Vec<_>>()
            .join(","),
        "nfd.node.kubernetes.io/extended-resources": "",
        "nvidia.com/gpu-driver-upgrade-enabled": "true",
    });
    let images: Vec<Value> = (0..50)
        .map(|i| {
            json!({
                "names": [
                    format!("nvcr.io/nvidia/cloud-native/image-{i:02}@sha256:{}", hex(i as u64, 64)),
                    format!("nvcr.io/nvidia/cloud-native/image-{i:02}:v24.9.{i}"),
                ],
                "sizeBytes": 1_234_567_890 + i,
            })
        })
        .collect();
    let mut conditions: Vec<Value> = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ]
    .iter()
    .map(|(kind, status, reason)| {
        json!({ "type": kind, "status": status, "reason": reason,
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": heartbeat, "lastTransitionTime": "2026-01-01T00:00:00Z" })
    })
    .collect();
    if has_agent(index) {
        let broken = is_broken(index);
        conditions.push(json!({
            "type": "zerohop.dev/DataPathReady",
            "status": if broken { "False" } else { "True" },
            "reason": if broken { "RdmaPortDown" } else { "DataPathReady" },
            "message": if broken { "RDMA004 mlx5_0/1: bring the link up; 1 failing: RDMA004" }
                       else { "no check fails; 1 warning: QOS001" },
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }));
    }
    let resources = |cpu: &str, memory: &str| {
        json!({ "cpu": cpu, "memory": memory, "ephemeral-storage": "3750157048Ki",
                "hugepages-1Gi": "0", "hugepages-2Mi": "0", "pods": "110",
                "nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "63" })
    };
    let third = index % 250;
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "labels": labels, "annotations": annotations },
        "spec": {
            "podCIDR": format!("10.{}.{}.0/24", 64 + index / 250, third),
            "podCIDRs": [format!("10.{}.{}.0/24", 64 + index / 250, third)],
            "providerID": format!("baremetal://{name}"),
        },
        "status": {
            "capacity": resources("128", "2113455968Ki"),
            "allocatable": resources("127", "2113353568Ki"),
            "conditions": conditions,
            "addresses": [{ "type": "InternalIP",
                            "address": format!("10.1.{}.{}", index / 250, third) },
                          { "type": "Hostname", "address": name }],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
            "nodeInfo": { "kernelVersion": "6.8.0-48-generic", "osImage": "Ubuntu 24.04.1 LTS",
                          "containerRuntimeVersion": "containerd://1.7.22",
                          "kubeletVersion": "v1.31.2", "kubeProxyVersion": "v1.31.2",
                          "architecture": "amd64", "operatingSystem": "linux",
                          "machineID": hex(1 << 32 | index as u64, 32),
                          "systemUUID": uuid(2 << 32 | index as u64),
                          "bootID": uuid(3 << 32 | index as u64) },
            "images": images,
        },
    })
}

/// The agent's `DataPathReport` of node `index`, as it writes one.
fn report(index: usize, finished: &str) -> Value {
    let name = node_name(index);
    let broken = is_broken(index);
    let mut findings = vec![json!({
        "id": "QOS001", "name": "pfc-off", "group": "qos", "status": "warn",
        "subject": "mlx5_0", "message": "PFC is off on priority 3",
        "fix": "enable PFC on the RoCE priority" })];
    if broken {
        findings.insert(
            0,
            json!({ "id": "RDMA004", "name": "rdma-port-down", "group": "rdma",
                    "status": "fail", "subject": "mlx5_0/1", "message": "port 1 is DOWN",
                    "fix": "bring the link up" }),
        );
    }
    json!({
        "apiVersion": "zerohop.dev/v1alpha1",
        "kind": "DataPathReport",
        "metadata": { "name": name },
        "node": name,
        "condition": if broken {
            json!({ "status": "False", "reason": "RdmaPortDown",
                    "message": "RDMA004 mlx5_0/1: bring the link up; 1 failing: RDMA004" })
        } else {
            json!({ "status": "True", "reason": "DataPathReady",
                    "message": "no check fails; 1 warning: QOS001" })
        },
        "pass": { "finishedAt": finished, "durationSeconds": 0.4,
                  "intervalSeconds": 300, "zerohopVersion": "0.1.0" },
        "summary": { "pass": 180, "info": 3, "warn": 1, "fail": u32::from(broken),
                     "unknown": 2, "notApplicable": 40, "blocked": 0 },
        "findings": findings,
        "omittedFindings": 0,
    })
}

/// `length` hexadecimal digits that look random and are the same for the
/// same `seed`: image digests (the same images on every node, as a
/// cluster's nodes pull), machine and boot IDs (one per node). Digits that
/// repeat would compress far better than real ones.
fn hex(seed: u64, length: usize) -> String {
    let mut state = seed;
    let mut text = String::with_capacity(length + 16);
    while text.len() < length {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        text.push_str(&format!("{:016x}", z ^ (z >> 31)));
    }
    text.truncate(length);
    text
}

/// A UUID of the digits of [`hex`].
fn uuid(seed: u64) -> String {
    let h = hex(seed, 32);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The `DataPathReport` CRD of the agent's own manifests.
fn install_crd(plane: &ControlPlane) {
    let crd = zerohop_plan::agent::objects(&AgentPlan::default(), Platform::Kubernetes)
        .into_iter()
        .find(|o| o["kind"] == "CustomResourceDefinition")
        .expect("the manifests hold the CRD");
    plane.apply(&crd.to_string());
    plane.wait_for_crds();
}

/// Creates the nodes and reports, 32 requests at a time.
fn populate(plane: &ControlPlane, nodes: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let text = std::fs::read_to_string(plane.kubeconfig()).expect("the kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&text).expect("a kubeconfig"),
            &KubeConfigOptions::default(),
        )
        .await
        .expect("a configuration");
        let client = kube::Client::try_from(config).expect("a client");
        let heartbeat = now();
        let created = futures::stream::iter(0..nodes)
            .map(|index| {
                let client = client.clone();
                let heartbeat = heartbeat.clone();
                async move {
                    create(&client, "/api/v1/nodes", &realistic_node(index, &heartbeat)).await;
                    if has_agent(index) {
                        create(
                            &client,
                            "/apis/zerohop.dev/v1alpha1/datapathreports",
                            &report(index, &heartbeat),
                        )
                        .await;
                    }
                }
            })
            .buffer_unordered(32);
        futures::pin_mut!(created);
        let mut done = 0;
        while created.next().await.is_some() {
            done += 1;
            if done % 1000 == 0 {
                print!(".");
                let _ = std::io::stdout().flush();
            }
        }
        println!();
    });
}

async fn create(client: &kube::Client, path: &str, object: &Value) {
    let request = kube::core::Request::new(path)
        .create(
            &kube::api::PostParams::default(),
            serde_json::to_vec(object).expect("JSON"),
        )
        .expect("a request");
    if let Err(err) = client.request_text(request).await {
        panic!("creating {}: {err}", object["metadata"]["name"]);
    }
}

/// The size of one object of `kind` (node 1 and its report) as compact
/// JSON, as the server writes it in a list (its managed fields included).
fn served_size(plane: &ControlPlane, kind: &str) -> usize {
    let name = node_name(1);
    // kubectl leaves the managed fields out unless asked.
    let args = ["get", kind, &name, "-o", "json", "--show-managed-fields"];
    let text = plane.kubectl_ok(&args, None);
    serde_json::from_str::<Value>(&text)
        .expect("kubectl prints JSON")
        .to_string()
        .len()
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!(
        "{cores} cores, {:.0} GiB, kernel {}",
        memory as f64 / (1 << 20) as f64,
        kernel.trim()
    )
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
