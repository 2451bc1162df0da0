//! `zerohop validate run` against the in-memory API server: scripted pods
//! that are scheduled, run and finish with the real captures of
//! `../shared/corpus/outputs` as their logs (read in place), a pod that
//! fails, one that is never scheduled, a missing MPI Operator, and Ctrl-C.
//! Each scenario checks the requests made and that everything created is
//! deleted by the run's label. Every run has a deadline: a hang fails.

mod validate_support;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use zerohop_testkit::fake_api_server::{FakeApiServer, PodScript, PodStep, Recorded};

const PERFTEST_PASS: &str =
    "perftest/ib_write_bw_client_A40_roce-gid3_rdma-cm_use-cuda-dmabuf_16qp_gbits_openshift.txt";
const PERFTEST_FAIL: &str = "perftest/ib_write_bw_client_roce-rocep133s0f0_fail_couldnt-connect_unable-to-init-socket_issue-perftest-pr228.txt";
const NCCL_PASS: &str =
    "nccl-tests/all_reduce_perf_4xL40S_2pods_openshift_sriov-roce_IB-enabled_nccl2.27.3.txt";

/// `../shared/corpus/outputs/<relative>`, read in place; `None` (and the
/// test says it skipped) when `../shared` is absent, which fails in CI. A missing capture with `../shared` present
/// fails.
fn capture(relative: &str) -> Option<String> {
    zerohop_testkit::shared_data::capture(&format!("outputs/{relative}"))
}

struct Setup {
    _dir: tempfile::TempDir,
    plan: PathBuf,
    kubeconfig: PathBuf,
    server: FakeApiServer,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let plan = validate_support::render_plan(dir.path());
    let server = FakeApiServer::start();
    let kubeconfig = server.write_kubeconfig(dir.path());
    Setup {
        _dir: dir,
        plan,
        kubeconfig,
        server,
    }
}

fn command(setup: &Setup, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zerohop"));
    command
        .args(["validate", "run", "--kubeconfig"])
        .arg(&setup.kubeconfig)
        .arg("--plan")
        .arg(&setup.plan)
        .args(["--format", "json"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Waits for `child` at most `limit`, killing it past that.
fn finish(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "validate run did not finish within {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn role(pod: &Value) -> &str {
    pod["metadata"]["labels"]["app.kubernetes.io/component"]
        .as_str()
        .unwrap_or_default()
}

fn label_selector(request: &Recorded) -> String {
    let query = request.uri.split_once('?').map_or("", |(_, q)| q);
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("labelSelector="))
        .map(|s| {
            s.replace("%3D", "=")
                .replace("%2C", ",")
                .replace("%2F", "/")
        })
        .unwrap_or_default()
}

/// The requests that change something, as `METHOD path [selector]`.
fn writes(server: &FakeApiServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| {
            let path = r.uri.split('?').next().unwrap_or_default();
            let selector = label_selector(r);
            let object = serde_json::from_str::<Value>(&r.body)
                .ok()
                .and_then(|b| b["metadata"]["name"].as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{} {path} {object}{selector}", r.method)
        })
        .collect()
}

/// The run's ID, from the label of the first object it created.
fn run_id(server: &FakeApiServer) -> String {
    let created = server
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("something was created");
    let body: Value = serde_json::from_str(&created.body).unwrap();
    body["metadata"]["labels"]["zerohop.dev/validate-run"]
        .as_str()
        .expect("the run label")
        .to_owned()
}

/// Every GET on pods is a list or watch by the run's label, or a log:
/// nothing is polled by name.
fn assert_follows_by_watch(server: &FakeApiServer, id: &str) {
    for request in server.requests().iter().filter(|r| r.method == "GET") {
        let path = request.uri.split('?').next().unwrap_or_default();
        if path.ends_with("/log") {
            assert!(request.uri.contains("limitBytes="), "{}", request.uri);
            continue;
        }
        assert!(path.ends_with("/pods"), "unexpected read {}", request.uri);
        assert!(
            label_selector(request).starts_with(&format!("zerohop.dev/validate-run={id},")),
            "{}",
            request.uri
        );
    }
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.uri.contains("watch=true")),
        "pods are followed by watches"
    );
}

fn assert_cleaned_up(server: &FakeApiServer, id: &str) {
    let writes = writes(server);
    let ns = "/api/v1/namespaces/ai";
    assert!(
        writes.ends_with(&[
            format!("DELETE /apis/kubeflow.org/v2beta1/namespaces/ai/mpijobs zerohop.dev/validate-run={id}"),
            format!("DELETE {ns}/pods zerohop.dev/validate-run={id}"),
        ]),
        "{writes:#?}"
    );
    assert!(server.pods().is_empty(), "{:#?}", server.pods());
    assert!(server.mpijobs().is_empty());
}

fn happy_script(perftest: String, nccl: String) -> Arc<dyn Fn(&Value) -> PodScript + Send + Sync> {
    Arc::new(move |pod: &Value| match role(pod) {
        "perftest-server" => PodScript {
            steps: vec![
                PodStep::Schedule("node-a".into()),
                PodStep::Run("10.0.0.1".into()),
                PodStep::Pause(Duration::from_millis(300)),
                PodStep::Succeed,
            ],
            log: String::new(),
        },
        "perftest-client" => PodScript {
            steps: vec![
                PodStep::Schedule("node-b".into()),
                PodStep::Run("10.0.0.2".into()),
                PodStep::Succeed,
            ],
            log: perftest.clone(),
        },
        "nccl-tests-launcher" => PodScript {
            steps: vec![
                PodStep::Schedule("node-c".into()),
                PodStep::Run("10.0.0.3".into()),
                PodStep::Succeed,
            ],
            log: nccl.clone(),
        },
        _ => PodScript::default(),
    })
}

#[test]
fn perftest_runs_per_rail_and_nccl_is_unknown_without_the_mpi_operator() {
    let (Some(perftest), Some(nccl)) = (capture(PERFTEST_PASS), capture(NCCL_PASS)) else {
        return;
    };
    let setup = setup();
    setup.server.script_pods(happy_script(perftest, nccl));
    let out = finish(
        command(&setup, &["--nodes", "node-a,node-b"])
            .spawn()
            .unwrap(),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|err| panic!("{err}: {stderr}"));
    let id = run_id(&setup.server);
    let ns = "/api/v1/namespaces/ai";
    let writes = writes(&setup.server);
    // Rail by rail: server, client (given the server's IP), then both go.
    let expected_start = [
        format!("POST {ns}/pods zerohop-perftest-h100-rail0-server"),
        format!("POST {ns}/pods zerohop-perftest-h100-rail0-client"),
        format!("DELETE {ns}/pods zerohop.dev/validate-run={id},zerohop.dev/rail=0"),
        format!("POST {ns}/pods zerohop-perftest-h100-rail1-server"),
        format!("POST {ns}/pods zerohop-perftest-h100-rail1-client"),
        format!("DELETE {ns}/pods zerohop.dev/validate-run={id},zerohop.dev/rail=1"),
        "POST /apis/kubeflow.org/v2beta1/namespaces/ai/mpijobs zerohop-nccl-tests-h100".to_owned(),
    ];
    assert_eq!(
        writes[..expected_start.len()],
        expected_start,
        "{writes:#?}"
    );
    assert_cleaned_up(&setup.server, &id);
    assert_follows_by_watch(&setup.server, &id);

    let client: Value = setup
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .nth(1)
        .unwrap();
    let env = &client["spec"]["containers"][0]["env"];
    let server_env = env
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "PERFTEST_SERVER")
        .unwrap();
    assert_eq!(server_env["value"], "10.0.0.1");
    assert_eq!(
        client["spec"]["nodeSelector"]["kubernetes.io/hostname"],
        "node-b"
    );

    let findings = report["findings"].as_array().unwrap();
    let subjects: Vec<&str> = findings
        .iter()
        .filter(|f| f["id"] == "VAL201")
        .filter_map(|f| f["subject"].as_str())
        .collect();
    assert!(
        subjects
            .iter()
            .any(|s| s.starts_with("rail0 node-a->node-b client"))
            && subjects
                .iter()
                .any(|s| s.starts_with("rail1 node-a->node-b client")),
        "{subjects:#?}"
    );
    let nccl = findings
        .iter()
        .find(|f| f["subject"] == "nccl-tests")
        .expect("the nccl part");
    assert_eq!(nccl["status"], "unknown");
    assert!(
        nccl["message"]
            .as_str()
            .unwrap()
            .contains("MPI Operator is not installed"),
        "{nccl:#}"
    );
    // The capture's perftest run passes what is judged without a link rate.
    assert_eq!(out.status.code(), Some(0), "{report:#}\n{stderr}");
}

#[test]
fn nccl_tests_run_through_the_mpijob_and_its_launcher_log_is_judged() {
    let (Some(perftest), Some(nccl)) = (capture(PERFTEST_PASS), capture(NCCL_PASS)) else {
        return;
    };
    let setup = setup();
    setup.server.set_mpijob_crd(true);
    setup.server.script_pods(happy_script(perftest, nccl));
    let out = finish(
        command(&setup, &["--nodes", "node-a,node-b,node-c"])
            .spawn()
            .unwrap(),
        Duration::from_secs(60),
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = run_id(&setup.server);
    let job: Value = setup
        .server
        .requests()
        .iter()
        .find(|r| r.uri.contains("/mpijobs") && r.method == "POST")
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .expect("the MPIJob was created");
    let specs = &job["spec"]["mpiReplicaSpecs"];
    assert_eq!(specs["Worker"]["replicas"], 3);
    assert_eq!(
        specs["Launcher"]["template"]["spec"]["containers"][0]["command"][3],
        "24"
    );
    assert_eq!(
        specs["Launcher"]["template"]["metadata"]["labels"]["zerohop.dev/validate-run"],
        id.as_str()
    );
    let nccl: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["group"] == "nccl")
        .collect();
    // The capture ran to its end with correct results (it has no
    // NCCL_DEBUG lines, so the transport is unknown).
    for (id, status) in [
        ("VAL108", "pass"),
        ("VAL110", "pass"),
        ("VAL101", "unknown"),
    ] {
        assert!(
            nccl.iter()
                .any(|f| f["id"] == id && f["status"] == status && f["subject"] == "nccl-tests"),
            "{id} {status}: {nccl:#?}"
        );
    }
    assert_cleaned_up(&setup.server, &id);
    assert_follows_by_watch(&setup.server, &id);
}

#[test]
fn a_failing_client_is_judged_from_its_log_and_fails_the_run() {
    let Some(failure) = capture(PERFTEST_FAIL) else {
        return;
    };
    let setup = setup();
    setup
        .server
        .script_pods(Arc::new(move |pod: &Value| match role(pod) {
            "perftest-server" => PodScript {
                steps: vec![
                    PodStep::Schedule("node-a".into()),
                    PodStep::Run("10.0.0.1".into()),
                ],
                log: String::new(),
            },
            _ => PodScript {
                steps: vec![
                    PodStep::Schedule("node-b".into()),
                    PodStep::Run("10.0.0.2".into()),
                    PodStep::Fail("Error".into()),
                ],
                log: failure.clone(),
            },
        }));
    let out = finish(
        command(&setup, &[]).spawn().unwrap(),
        Duration::from_secs(60),
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = run_id(&setup.server);
    let failed = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "VAL204" && f["status"] == "fail")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert!(
        failed["subject"]
            .as_str()
            .unwrap()
            .starts_with("rail0 node-a->node-b client")
    );
    assert_eq!(out.status.code(), Some(1));
    assert_cleaned_up(&setup.server, &id);
}

#[test]
fn a_pod_never_scheduled_times_out_with_the_schedulers_reason_and_is_deleted() {
    let setup = setup();
    setup.server.script_pods(Arc::new(|_: &Value| PodScript {
        steps: vec![PodStep::Unschedulable(
            "0/3 nodes are available: 3 Insufficient nvidia.com/rdma_rail0".into(),
        )],
        log: String::new(),
    }));
    let started = Instant::now();
    let out = finish(
        command(&setup, &["--timeout", "2s"]).spawn().unwrap(),
        Duration::from_secs(30),
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = run_id(&setup.server);
    let finding = &report["findings"][0];
    assert_eq!(finding["id"], "VAL204", "{report:#}");
    assert_eq!(finding["status"], "fail");
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.starts_with("did not finish within 2s: pod zerohop-perftest-h100-rail0-server not scheduled: 0/3 nodes"),
        "{message}"
    );
    assert_eq!(out.status.code(), Some(1));
    assert_cleaned_up(&setup.server, &id);
}

#[test]
fn ctrl_c_deletes_everything_and_exits_130() {
    let setup = setup();
    // Pods stay pending: the run waits until interrupted.
    let child = command(&setup, &[]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !setup.server.requests().iter().any(|r| r.method == "POST") {
        assert!(Instant::now() < deadline, "nothing was created");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = finish(child, Duration::from_secs(30));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = run_id(&setup.server);
    assert_cleaned_up(&setup.server, &id);
}

#[test]
fn a_cluster_that_refuses_exits_2_without_a_report() {
    let setup = setup();
    setup
        .server
        .inject(zerohop_testkit::fake_api_server::Fault {
            method: Some("POST".into()),
            path_prefix: "/api/v1/namespaces/ai/pods".into(),
            status: Some(403),
            ..Default::default()
        });
    let out = finish(
        command(&setup, &[]).spawn().unwrap(),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot create the perftest server in namespace ai"),
        "{stderr}"
    );
    // Cleanup runs even then, by label.
    assert!(
        writes(&setup.server)
            .iter()
            .any(|w| w.starts_with("DELETE /api/v1/namespaces/ai/pods"))
    );
}
