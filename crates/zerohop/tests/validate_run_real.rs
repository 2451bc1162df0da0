//! `zerohop validate run` against the real kube-apiserver and etcd
//! (`tools/control-plane`), with the MPI Operator's real `MPIJob` CRD from
//! `../shared/reference/crds` (read in place).
//!
//! The plane has no scheduler, kubelet or MPI Operator: a pod stays
//! Pending and unplaced, an `MPIJob` makes no pods. So the run's timeout,
//! Ctrl-C and cleanup are proved against exactly that, and where a test
//! needs more, it plays the missing part itself through the API, as that
//! part writes it: the scheduler's `pods/binding` or its `Unschedulable`
//! condition, the kubelet's pod status through the status subresource,
//! the operator's launcher and worker pods. Nobody serves the pods' logs
//! (that needs a kubelet), so the judging of logs stays with the fake
//! server's tests (`validate_run.rs`); here the server judges what only a
//! server can: admission of every object as rendered (nothing pruned,
//! nothing refused), RBAC with the Role `docs/validate.md` states, the
//! discovery answer without the CRD, immediate deletion of pods bound to a
//! node that no kubelet confirms, and that nothing the run created is left.

#![cfg(feature = "cluster")]

mod validate_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use zerohop_testkit::control_plane::ControlPlane;

/// The label every object of a run carries (docs/validate.md, Cleanup).
const RUN_LABEL: &str = "zerohop.dev/validate-run";
/// The label of a rendered test's role.
const COMPONENT: &str = "app.kubernetes.io/component";
const SERVER0: &str = "zerohop-perftest-h100-rail0-server";
const CLIENT0: &str = "zerohop-perftest-h100-rail0-client";
const SERVER1: &str = "zerohop-perftest-h100-rail1-server";
const CLIENT1: &str = "zerohop-perftest-h100-rail1-client";
const MPIJOB: &str = "zerohop-nccl-tests-h100";
/// What kube-scheduler writes on a pod no node has room for
/// (`PodScheduled` `False`, reason `Unschedulable`; the message as its
/// `FitError` prints it).
const NO_ROOM: &str = "0/2 nodes are available: 2 Insufficient nvidia.com/rdma_rail0. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.";
/// What the kubelet writes on a container whose image it cannot pull.
const PULL_FAILED: &str =
    "failed to pull and unpack image \"ghcr.io/example/zerohop:test\": 403 Forbidden";

/// The shared plane with the `MPIJob` CRD installed, or `None` (the test
/// skips, visibly) without Go or without `../shared`.
fn plane() -> Option<&'static ControlPlane> {
    static CRD: OnceLock<()> = OnceLock::new();
    let reference = zerohop_testkit::shared_data::reference()?;
    let plane = ControlPlane::shared()?;
    CRD.get_or_init(|| {
        plane.install_crds(&[reference.join("crds/kubeflow.org_mpijobs.yaml")]);
    });
    Some(plane)
}

/// A rendered plan, and a copy of it with only the nccl-tests `MPIJob`, so
/// that a run reaches the `MPIJob` without perftest pods that never run.
struct Plan {
    _dir: tempfile::TempDir,
    full: PathBuf,
    mpijob_only: PathBuf,
}

fn plan() -> Plan {
    let dir = tempfile::tempdir().unwrap();
    let full = validate_support::render_plan(dir.path());
    let mpijob_only = dir.path().join("mpijob-only");
    let tests = mpijob_only.join("validate/h100");
    std::fs::create_dir_all(&tests).unwrap();
    std::fs::copy(
        full.join("validate/h100/nccl-tests-mpijob.yaml"),
        tests.join("nccl-tests-mpijob.yaml"),
    )
    .unwrap();
    Plan {
        _dir: dir,
        full,
        mpijob_only,
    }
}

/// The objects of a rendered file of the plan's tests.
fn rendered(plan: &Path, file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(plan.join("validate/h100").join(file)).unwrap();
    serde_saphyr::from_multiple::<Value>(&text).unwrap()
}

fn rendered_named(plan: &Path, file: &str, name: &str) -> Value {
    rendered(plan, file)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{file} renders {name}"))
}

/// `zerohop validate run` on `plan`, in `namespace`, with `kubeconfig`.
fn validate_run(kubeconfig: &Path, plan: &Path, namespace: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["validate", "run", "--kubeconfig"])
        .arg(kubeconfig)
        .arg("--plan")
        .arg(plan)
        .args(["--namespace", namespace])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `zerohop validate run` on `plan` in `namespace` with `kubeconfig`, to
/// its end (at most `limit`), while `cluster` plays the parts this plane
/// lacks; what it printed, and what the server held of each object it
/// created.
fn run_to_end(
    plane: &'static ControlPlane,
    kubeconfig: &Path,
    plan: &Path,
    namespace: &str,
    cluster: Cluster,
    extra: &[&str],
    limit: Duration,
) -> (Output, BTreeMap<String, Seen>) {
    let actors = Actors::start(plane, namespace, cluster);
    let out = finish(validate_run(kubeconfig, plan, namespace, extra), limit);
    (out, actors.stop())
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

/// Stops the run as Ctrl-C does.
fn interrupt(child: &Child) {
    rustix::process::kill_process(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::INT,
    )
    .unwrap();
}

/// The run's ID, from the line it starts with on standard error.
fn run_id(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("run ")?.split_once(" in namespace "))
        .map(|(id, _)| id.to_owned())
        .unwrap_or_else(|| panic!("no run ID in: {stderr}"))
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "{err}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn findings(report: &Value) -> Vec<Value> {
    report["findings"].as_array().cloned().unwrap_or_default()
}

/// What the real server still holds of run `id`: its pods and `MPIJob`s
/// in every namespace, by the run's label, and every pod and `MPIJob` of
/// `namespace` whatever its labels (an object whose label was lost would
/// escape the first). `mpijobs`: whether the plane serves them.
fn leftovers(plane: &ControlPlane, id: &str, namespace: &str, mpijobs: bool) -> Vec<String> {
    let kinds = if mpijobs { "pods,mpijobs" } else { "pods" };
    let selector = format!("{RUN_LABEL}={id}");
    let mut left = plane.kubectl_ok(&["get", kinds, "-A", "-l", &selector, "-o", "name"], None);
    left.push_str(&plane.kubectl_ok(&["get", kinds, "-n", namespace, "-o", "name"], None));
    left.lines().map(str::to_owned).collect()
}

/// Asserts that everything `rendered` says is in `stored` (what the server
/// kept of it), unchanged, except at the paths in `changed` (what the run
/// changes on purpose): nothing dropped by the client's typed model or by
/// the server's pruning, nothing rewritten by its defaulting.
fn assert_kept(rendered: &Value, stored: &Value, path: &str, changed: &[&str]) {
    if changed.contains(&path) {
        return;
    }
    match rendered {
        Value::Object(fields) => {
            for (key, value) in fields {
                let at = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                // The server keeps every field the plan rendered.
                assert!(
                    !stored[key].is_null() || value.is_null(),
                    "the server dropped {at}: {stored:#}"
                );
                assert_kept(value, &stored[key], &at, changed);
            }
        }
        Value::Array(items) => {
            // Lists keep their rendered items, in order (the server's
            // defaults may only add to them).
            let kept = stored.as_array().map_or(0, Vec::len);
            assert!(kept >= items.len(), "{path} lost items: {stored:#}");
            for (index, item) in items.iter().enumerate() {
                assert_kept(item, &stored[index], &format!("{path}.{index}"), changed);
            }
        }
        // Every value as rendered: the server rewrote none.
        scalar => assert_eq!(scalar, stored, "{path}"),
    }
}

/// What the parts of a cluster this plane lacks do to a run's objects,
/// played by the test through the API as each writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cluster {
    /// No scheduler, no kubelet: nothing happens to a pod (this plane).
    Nothing,
    /// kube-scheduler finds no node with room: its `Unschedulable`
    /// condition on every pod.
    NoRoom,
    /// The server is placed and runs; the client is placed on its node,
    /// whose kubelet cannot pull the image of the pod check.
    ClientCannotPull,
    /// Every pod is placed and runs to its end; the MPI Operator makes an
    /// `MPIJob`'s launcher and workers.
    Everything,
}

/// One object as the test last saw it, with the polls it was first and
/// last seen in.
#[derive(Debug, Clone)]
struct Seen {
    first: usize,
    last: usize,
    object: Value,
}

/// Polls the namespace's pods and `MPIJob`s (every 100 ms, 20 ms after a
/// step), records every version, and plays `Cluster` on them.
struct Actors {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<String, Seen>>>,
    thread: Option<JoinHandle<()>>,
}

impl Actors {
    fn start(plane: &'static ControlPlane, namespace: &str, cluster: Cluster) -> Actors {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let namespace = namespace.to_owned();
        let thread = {
            let (stop, seen) = (stop.clone(), seen.clone());
            std::thread::spawn(move || {
                let mut made = Vec::new();
                let mut poll = 0;
                while !stop.load(Ordering::Relaxed) {
                    poll += 1;
                    let listed = plane.kubectl_output(
                        &["get", "pods,mpijobs", "-n", &namespace, "-o", "json"],
                        None,
                    );
                    let items: Vec<Value> = serde_json::from_slice::<Value>(&listed.stdout)
                        .ok()
                        .and_then(|list| list["items"].as_array().cloned())
                        .unwrap_or_default();
                    {
                        let mut seen = seen.lock().unwrap();
                        for item in &items {
                            let key = format!(
                                "{}/{}",
                                item["kind"].as_str().unwrap_or_default(),
                                item["metadata"]["name"].as_str().unwrap_or_default()
                            );
                            let entry = seen.entry(key).or_insert(Seen {
                                first: poll,
                                last: poll,
                                object: Value::Null,
                            });
                            entry.last = poll;
                            entry.object = item.clone();
                        }
                    }
                    let mut acted = false;
                    for item in &items {
                        acted |= play(plane, &namespace, cluster, item, &items, &mut made);
                    }
                    // After a step, the next soon: what it led to is what
                    // the run waits for.
                    std::thread::sleep(Duration::from_millis(if acted { 20 } else { 100 }));
                }
            })
        };
        Actors {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    /// Every object seen so far, by `Kind/name`.
    fn seen(&self) -> BTreeMap<String, Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The last version of `Kind/name` seen, once it has been seen.
    fn wait_for(&self, key: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(seen) = self.seen().get(key) {
                return seen.object.clone();
            }
            // The run creates it within seconds of starting.
            assert!(Instant::now() < deadline, "{key} never appeared");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops playing and returns everything seen.
    fn stop(mut self) -> BTreeMap<String, Seen> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the actors do not panic");
        }
        self.seen()
    }
}

impl Drop for Actors {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One step of `cluster` for one object, and whether it took one;
/// failures (an object the run deleted meanwhile) are ignored, as the next
/// poll sees the truth.
fn play(
    plane: &ControlPlane,
    namespace: &str,
    cluster: Cluster,
    item: &Value,
    items: &[Value],
    made: &mut Vec<String>,
) -> bool {
    let name = item["metadata"]["name"].as_str().unwrap_or_default();
    if item["kind"] == "MPIJob" {
        if cluster == Cluster::Everything && !made.iter().any(|m| m == name) {
            made.push(name.to_owned());
            operator(plane, namespace, item);
            return true;
        }
        return false;
    }
    let acted = std::cell::Cell::new(false);
    let component = item["metadata"]["labels"][COMPONENT]
        .as_str()
        .unwrap_or_default();
    let node = item["spec"]["nodeName"].as_str();
    let phase = item["status"]["phase"].as_str().unwrap_or("Pending");
    let status = |status: Value| {
        acted.set(true);
        plane.kubectl_output(
            &[
                "patch",
                "pod",
                name,
                "-n",
                namespace,
                "--subresource=status",
                "--type=merge",
                "-p",
                &json!({ "status": status }).to_string(),
            ],
            None,
        );
    };
    match (cluster, node) {
        (Cluster::Nothing, _) | (Cluster::NoRoom, Some(_)) => {}
        (Cluster::NoRoom, None) => {
            if item["status"]["conditions"].is_null() {
                status(json!({ "conditions": [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": NO_ROOM, "lastTransitionTime": "2026-01-01T00:00:00Z",
                }]}));
            }
        }
        (_, None) => {
            acted.set(true);
            bind(plane, namespace, item);
        }
        (Cluster::ClientCannotPull, Some(_)) => match (component, phase) {
            ("perftest-server", "Pending") => status(running(item, "10.0.0.1")),
            ("perftest-client", "Pending") if item["status"]["initContainerStatuses"].is_null() => {
                status(json!({
                    "initContainerStatuses": [container_status(
                        item, "initContainers", 0,
                        json!({"waiting": {"reason": "ErrImagePull", "message": PULL_FAILED}}),
                    )],
                    "containerStatuses": [container_status(
                        item, "containers", 0, json!({"waiting": {"reason": "PodInitializing"}}),
                    )],
                }));
            }
            _ => {}
        },
        (Cluster::Everything, Some(_)) => match (component, phase) {
            ("perftest-server", "Pending") => {
                let rail = item["metadata"]["labels"]["zerohop.dev/rail"]
                    .as_str()
                    .unwrap_or("0");
                status(running(item, &format!("10.0.{rail}.1")));
            }
            ("perftest-server", "Running") => {
                // The server exits after its one client did.
                let rail = &item["metadata"]["labels"]["zerohop.dev/rail"];
                let client_done = items.iter().any(|other| {
                    other["metadata"]["labels"][COMPONENT] == "perftest-client"
                        && other["metadata"]["labels"]["zerohop.dev/rail"] == *rail
                        && other["status"]["phase"] == "Succeeded"
                });
                if client_done {
                    status(succeeded(item));
                }
            }
            ("perftest-client" | "nccl-tests-launcher", "Pending") => status(succeeded(item)),
            ("nccl-tests-worker", "Pending") => status(running(item, "10.0.9.1")),
            _ => {}
        },
    }
    acted.get()
}

/// kube-scheduler's placement: a `Binding` of the pod to the node it is
/// pinned to (`kubernetes.io/hostname` in its node selector or its node
/// affinity, a worker by its index), `gpu-a` when it is not pinned.
fn bind(plane: &ControlPlane, namespace: &str, pod: &Value) {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let affinity = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchExpressions"][0]["values"];
    let index: usize = name
        .rsplit_once("-worker-")
        .and_then(|(_, i)| i.parse().ok())
        .unwrap_or(0);
    let node = pod["spec"]["nodeSelector"]["kubernetes.io/hostname"]
        .as_str()
        .or_else(|| affinity[index].as_str())
        .unwrap_or("gpu-a");
    let binding = json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": { "name": name, "namespace": namespace },
        "target": { "apiVersion": "v1", "kind": "Node", "name": node },
    });
    plane.kubectl_output(
        &[
            "create",
            "--raw",
            &format!("/api/v1/namespaces/{namespace}/pods/{name}/binding"),
            "-f",
            "-",
        ],
        Some(&binding.to_string()),
    );
}

/// A container's status as the kubelet writes it.
fn container_status(pod: &Value, list: &str, index: usize, state: Value) -> Value {
    let container = &pod["spec"][list][index];
    json!({
        "name": container["name"], "image": container["image"], "imageID": "",
        "ready": false, "restartCount": 0, "state": state,
    })
}

/// The kubelet's status of a pod whose containers started.
fn running(pod: &Value, ip: &str) -> Value {
    json!({
        "phase": "Running", "podIP": ip, "podIPs": [{ "ip": ip }],
        "containerStatuses": [container_status(pod, "containers", 0,
            json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}))],
    })
}

/// The kubelet's status of a pod whose containers (its pod check first)
/// exited 0.
fn succeeded(pod: &Value) -> Value {
    let done = json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
    let mut status = json!({
        "phase": "Succeeded",
        "containerStatuses": [container_status(pod, "containers", 0, done.clone())],
    });
    if pod["spec"]["initContainers"].is_array() {
        status["initContainerStatuses"] = json!([container_status(pod, "initContainers", 0, done)]);
    }
    status
}

/// The MPI Operator's part: the launcher and the workers of an `MPIJob`,
/// from its templates (their labels included), owned by it.
fn operator(plane: &ControlPlane, namespace: &str, job: &Value) {
    let name = job["metadata"]["name"].as_str().unwrap_or_default();
    let owner = json!([{
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "name": name,
        "uid": job["metadata"]["uid"], "controller": true,
    }]);
    let specs = &job["spec"]["mpiReplicaSpecs"];
    let workers = specs["Worker"]["replicas"].as_u64().unwrap_or(0);
    let pods = std::iter::once(("Launcher", format!("{name}-launcher")))
        .chain((0..workers).map(|i| ("Worker", format!("{name}-worker-{i}"))));
    for (role, pod) in pods {
        let template = &specs[role]["template"];
        let mut metadata = template["metadata"].clone();
        metadata["name"] = json!(pod);
        metadata["namespace"] = json!(namespace);
        metadata["ownerReferences"] = owner.clone();
        let object = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"],
        });
        plane.kubectl_output(&["create", "-f", "-"], Some(&object.to_string()));
    }
}

/// The Role `docs/validate.md` states under **Permissions**, moved to
/// `namespace`.
fn documented_role(namespace: &str) -> Value {
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/validate.md"),
    )
    .unwrap();
    let permissions = docs
        .split_once("**Permissions.**")
        .expect("docs/validate.md states the permissions of validate run")
        .1;
    let yaml = permissions
        .split_once("```yaml\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("the Role as a YAML block")
        .0;
    let mut role: Value = serde_saphyr::from_str(yaml).unwrap();
    // Namespaced permissions: the docs say "in the run's namespace only".
    assert_eq!(
        role["kind"], "Role",
        "the documented permissions are a Role"
    );
    role["metadata"]["namespace"] = json!(namespace);
    role
}

/// A service account of `namespace` bound to `role` (applied now) and
/// nothing else, and a kubeconfig with a token of it from the TokenRequest
/// API (`kubectl create token`, no bound object), written into `dir`.
fn account(plane: &ControlPlane, namespace: &str, role: &Value, dir: &Path) -> PathBuf {
    plane.kubectl_ok(
        &["create", "serviceaccount", "runner", "-n", namespace],
        None,
    );
    plane.apply(&role.to_string());
    let name = role["metadata"]["name"].as_str().unwrap();
    plane.kubectl_ok(
        &[
            "create",
            "rolebinding",
            name,
            "-n",
            namespace,
            &format!("--role={name}"),
            &format!("--serviceaccount={namespace}:runner"),
        ],
        None,
    );
    let token = plane.kubectl_ok(&["create", "token", "runner", "-n", namespace], None);
    plane.write_token_kubeconfig(token.trim(), &dir.join("runner.kubeconfig"))
}

/// Waits until RBAC answers `allowed` to `verb` on `resource` for the
/// run's account in `namespace`.
fn await_rbac(plane: &ControlPlane, namespace: &str, verb: &str, resource: &str, allowed: bool) {
    plane.await_can_i(
        &format!("system:serviceaccount:{namespace}:runner"),
        &[&[verb, resource, "-n", namespace]],
        allowed,
    );
}

#[test]
fn a_pod_no_scheduler_placed_is_admitted_as_rendered_times_out_in_plain_words_and_is_deleted() {
    let Some(plane) = plane() else {
        return;
    };
    let plan = plan();
    let namespace = plane.namespace("validate-run");
    let (out, seen) = run_to_end(
        plane,
        &plane.kubeconfig(),
        &plan.full,
        &namespace,
        Cluster::Nothing,
        &["--nodes", "gpu-a,gpu-b", "--timeout", "3s"],
        Duration::from_secs(60),
    );
    let id = run_id(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A test that timed out fails the run (docs/validate.md, Exit codes).
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    // The human report says, in words, that the pod waits for a node and
    // that nothing said why (no scheduler runs here).
    assert!(
        stdout.contains(&format!(
            "rail0: did not finish within 3s: pod {SERVER0} pending: not yet scheduled to a node, and no scheduler has said why"
        )),
        "{stdout}"
    );
    // The client waits for its server: the server is all the run created.
    assert_eq!(
        seen.keys().collect::<Vec<_>>(),
        [&format!("Pod/{SERVER0}")],
        "{seen:#?}"
    );
    let stored = &seen[&format!("Pod/{SERVER0}")].object;
    // Admitted as rendered: nothing dropped or rewritten but the namespace
    // the run was given.
    assert_kept(
        &rendered_named(&plan.full, "perftest-rail0.yaml", SERVER0),
        stored,
        "",
        &["metadata.namespace"],
    );
    // And with what the run adds: its label (cleanup deletes by it), the
    // node it was pinned to, the pod check before the test.
    assert_eq!(stored["metadata"]["labels"][RUN_LABEL], id.as_str());
    assert_eq!(
        stored["spec"]["nodeSelector"]["kubernetes.io/hostname"],
        "gpu-a"
    );
    assert_eq!(
        stored["spec"]["initContainers"][0]["name"],
        "zerohop-pod-check"
    );
    // No kubelet and no scheduler: it stayed unplaced and Pending.
    assert!(stored["spec"]["nodeName"].is_null(), "{stored:#}");
    assert_eq!(stored["status"]["phase"], "Pending");
    // Nothing the run created is left on the server.
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );
}

#[test]
fn the_schedulers_reason_reaches_the_report_as_it_wrote_it_and_the_pod_is_deleted() {
    let Some(plane) = plane() else {
        return;
    };
    let plan = plan();
    let namespace = plane.namespace("validate-run");
    let (out, seen) = run_to_end(
        plane,
        &plane.kubeconfig(),
        &plan.full,
        &namespace,
        Cluster::NoRoom,
        &["--timeout", "3s", "--format", "json"],
        Duration::from_secs(60),
    );
    let id = run_id(&out);
    let report = report(&out);
    // The scheduler's condition was written through the status
    // subresource before the run ended, so the run's watch saw it.
    assert_eq!(
        seen[&format!("Pod/{SERVER0}")].object["status"]["conditions"][0]["message"],
        NO_ROOM
    );
    let findings = findings(&report);
    // One test ran out of time: rail 0's, with the scheduler's own words.
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["id"], "VAL204");
    assert_eq!(findings[0]["status"], "fail");
    assert_eq!(
        findings[0]["message"],
        format!("did not finish within 3s: pod {SERVER0} not scheduled: {NO_ROOM}")
    );
    // A timed-out test fails the run.
    assert_eq!(out.status.code(), Some(1));
    // Nothing the run created is left.
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );
}

#[test]
fn a_running_server_gets_its_client_and_both_pods_on_nodes_are_deleted_after_the_timeout() {
    let Some(plane) = plane() else {
        return;
    };
    let plan = plan();
    let namespace = plane.namespace("validate-run");
    let (out, seen) = run_to_end(
        plane,
        &plane.kubeconfig(),
        &plan.full,
        &namespace,
        Cluster::ClientCannotPull,
        &[
            "--nodes",
            "gpu-a,gpu-b",
            "--timeout",
            "6s",
            "--format",
            "json",
        ],
        Duration::from_secs(60),
    );
    let id = run_id(&out);
    let report = report(&out);
    let server = &seen[&format!("Pod/{SERVER0}")].object;
    let client = &seen[&format!("Pod/{CLIENT0}")].object;
    // Both were on nodes when the run ended (as the scheduler left them):
    // their deletion did not need a kubelet to confirm it.
    assert_eq!(server["spec"]["nodeName"], "gpu-a");
    assert_eq!(client["spec"]["nodeName"], "gpu-b");
    // The client was admitted as rendered but for the server's address,
    // which the run gives it: the pod IP the kubelet reported.
    assert_kept(
        &rendered_named(&plan.full, "perftest-rail0.yaml", CLIENT0),
        client,
        "",
        &["metadata.namespace", "spec.containers.0.env.0.value"],
    );
    assert_eq!(
        client["spec"]["containers"][0]["env"][0]["name"],
        "PERFTEST_SERVER"
    );
    assert_eq!(
        client["spec"]["containers"][0]["env"][0]["value"],
        "10.0.0.1"
    );
    assert_eq!(client["metadata"]["labels"][RUN_LABEL], id.as_str());
    let findings = findings(&report);
    // The client is the test that ran out of time, and the report says why
    // it waits as the kubelet said it: its pod check's image.
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["id"], "VAL204");
    assert_eq!(
        findings[0]["message"],
        format!(
            "did not finish within 6s: pod {CLIENT0} pending on gpu-b: container zerohop-pod-check waiting: ErrImagePull: {PULL_FAILED}"
        )
    );
    // A timed-out test fails the run.
    assert_eq!(out.status.code(), Some(1));
    // The pods bound to nodes are gone at once, not left Terminating.
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );
}

#[test]
fn ctrl_c_on_the_real_server_deletes_every_pod_placed_or_not_and_exits_130() {
    let Some(plane) = plane() else {
        return;
    };
    let plan = plan();
    let namespace = plane.namespace("validate-run");
    let actors = Actors::start(plane, &namespace, Cluster::ClientCannotPull);
    // The default timeout (15m): only the interrupt ends this run.
    let child = validate_run(
        &plane.kubeconfig(),
        &plan.full,
        &namespace,
        &["--nodes", "gpu-a,gpu-b"],
    );
    actors.wait_for(&format!("Pod/{CLIENT0}"), Duration::from_secs(30));
    interrupt(&child);
    let out = finish(child, Duration::from_secs(40));
    let seen = actors.stop();
    let id = run_id(&out);
    // 128 + SIGINT, after the cleanup (docs/validate.md, Exit codes).
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The run had created both pods of rail 0, the server on its node.
    assert_eq!(
        seen[&format!("Pod/{SERVER0}")].object["spec"]["nodeName"],
        "gpu-a"
    );
    assert!(seen.contains_key(&format!("Pod/{CLIENT0}")));
    // It says it cleaned up, and the server agrees: nothing is left.
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted; the tests were deleted"));
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );
}

#[test]
fn a_whole_run_under_the_documented_role_creates_every_test_in_order_and_leaves_nothing() {
    let Some(plane) = plane() else {
        return;
    };
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let namespace = plane.namespace("validate-run");
    let kubeconfig = account(plane, &namespace, &documented_role(&namespace), dir.path());
    await_rbac(
        plane,
        &namespace,
        "deletecollection",
        "mpijobs.kubeflow.org",
        true,
    );
    let (out, seen) = run_to_end(
        plane,
        &kubeconfig,
        &plan.full,
        &namespace,
        Cluster::Everything,
        &[
            "--nodes",
            "gpu-a,gpu-b",
            "--timeout",
            "60s",
            "--format",
            "json",
        ],
        Duration::from_secs(90),
    );
    let id = run_id(&out);
    let report = report(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The documented Role is enough: nothing was refused.
    assert!(!stderr.contains("forbidden"), "{stderr}");
    let pod = |name: &str| {
        seen.get(&format!("Pod/{name}"))
            .unwrap_or_else(|| panic!("{name} was never created: {seen:#?}"))
    };
    // Every perftest pod was admitted as rendered (the client but for the
    // server's address) and carried the run's label.
    for (file, name, changed) in [
        ("perftest-rail0.yaml", SERVER0, &["metadata.namespace"][..]),
        (
            "perftest-rail0.yaml",
            CLIENT0,
            &["metadata.namespace", "spec.containers.0.env.0.value"],
        ),
        ("perftest-rail1.yaml", SERVER1, &["metadata.namespace"]),
        (
            "perftest-rail1.yaml",
            CLIENT1,
            &["metadata.namespace", "spec.containers.0.env.0.value"],
        ),
    ] {
        let stored = &pod(name).object;
        assert_kept(&rendered_named(&plan.full, file, name), stored, "", changed);
        assert_eq!(
            stored["metadata"]["labels"][RUN_LABEL],
            id.as_str(),
            "{name}"
        );
    }
    // Each client was given its own rail's server address.
    assert_eq!(
        pod(CLIENT1).object["spec"]["containers"][0]["env"][0]["value"],
        "10.0.1.1"
    );
    // In order: a rail's client after its server, and a rail's pods gone
    // before the next rail starts (they hold a GPU of the same nodes); the
    // MPIJob after the last rail.
    assert!(pod(SERVER0).first <= pod(CLIENT0).first);
    assert!(
        pod(SERVER0).last.max(pod(CLIENT0).last) < pod(SERVER1).first,
        "{seen:#?}"
    );
    assert!(pod(SERVER1).first <= pod(CLIENT1).first);
    let job = seen
        .get(&format!("MPIJob/{MPIJOB}"))
        .unwrap_or_else(|| panic!("the MPIJob was never created: {seen:#?}"));
    assert!(
        pod(SERVER1).last.max(pod(CLIENT1).last) < job.first,
        "{seen:#?}"
    );
    // The MPIJob was admitted by its real CRD as rendered: nothing pruned
    // by its structural schema (with two nodes, the pinned replicas and
    // ranks are the rendered ones).
    assert_kept(
        &rendered(&plan.full, "nccl-tests-mpijob.yaml")[0],
        &job.object,
        "",
        &["metadata.namespace"],
    );
    let specs = &job.object["spec"]["mpiReplicaSpecs"];
    // The run's label survived the schema on the job and in both pod
    // templates, so the operator's pods carry it too.
    assert_eq!(job.object["metadata"]["labels"][RUN_LABEL], id.as_str());
    for role in ["Launcher", "Worker"] {
        assert_eq!(
            specs[role]["template"]["metadata"]["labels"][RUN_LABEL],
            id.as_str(),
            "{role}"
        );
    }
    // The workers' pin to the given nodes survived too.
    assert_eq!(
        specs["Worker"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchExpressions"][0]["values"],
        json!(["gpu-a", "gpu-b"])
    );
    // The operator's pods (made by the test from those templates) existed.
    for name in [
        format!("{MPIJOB}-launcher"),
        format!("{MPIJOB}-worker-0"),
        format!("{MPIJOB}-worker-1"),
    ] {
        assert_eq!(
            pod(&name).object["metadata"]["labels"][RUN_LABEL],
            id.as_str(),
            "{name}"
        );
    }
    // Every test ran to its end, and its log could not be read: no kubelet
    // serves it here. The reads were allowed (pods/log get of the Role):
    // the refusal is the missing kubelet's, not RBAC's.
    let findings = findings(&report);
    let unread: Vec<(&str, &str)> = findings
        .iter()
        .filter(|f| f["status"] == "fail")
        .map(|f| {
            (
                f["subject"].as_str().unwrap(),
                f["message"].as_str().unwrap(),
            )
        })
        .collect();
    for subject in [
        "rail0 gpu-a->gpu-b client",
        "rail0 gpu-a->gpu-b server",
        "rail1 gpu-a->gpu-b client",
        "rail1 gpu-a->gpu-b server",
        "nccl-tests",
    ] {
        let message = unread
            .iter()
            .find(|(s, _)| *s == subject)
            .unwrap_or_else(|| panic!("no finding of {subject}: {report:#}"))
            .1;
        assert!(message.contains("cannot read the"), "{subject}: {message}");
        assert!(!message.contains("forbidden"), "{subject}: {message}");
    }
    // Those failures fail the run.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The cleanup (deletecollection of the Role) left nothing: no MPIJob,
    // no perftest pod, none of the operator's pods.
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );
}

#[test]
fn an_mpijob_without_its_operator_times_out_saying_so_is_deleted_on_ctrl_c_and_a_missing_namespace_is_refused()
 {
    let Some(plane) = plane() else {
        return;
    };
    let plan = plan();
    let namespace = plane.namespace("validate-run");

    // Timed out: the CRD is there, its operator is not.
    let (out, seen) = run_to_end(
        plane,
        &plane.kubeconfig(),
        &plan.mpijob_only,
        &namespace,
        Cluster::Nothing,
        &[
            "--nodes",
            "gpu-a,gpu-b",
            "--timeout",
            "3s",
            "--format",
            "json",
        ],
        Duration::from_secs(60),
    );
    let id = run_id(&out);
    let report = report(&out);
    let job = &seen[&format!("MPIJob/{MPIJOB}")].object;
    // Admitted by the real CRD as rendered, with the run's label on the
    // job and its templates.
    assert_kept(
        &rendered(&plan.full, "nccl-tests-mpijob.yaml")[0],
        job,
        "",
        &["metadata.namespace"],
    );
    assert_eq!(job["metadata"]["labels"][RUN_LABEL], id.as_str());
    assert_eq!(
        job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"]["labels"][RUN_LABEL],
        id.as_str()
    );
    let findings = findings(&report);
    // One test ran out of time, and the report says what it waited for: an
    // operator to make the launcher, not a pod to be scheduled.
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["id"], "VAL110");
    assert_eq!(
        findings[0]["message"],
        format!(
            "did not finish within 3s: MPIJob {MPIJOB} was created but no launcher pod appeared: the MPI Operator is not running, or does not take MPIJobs in namespace {namespace}"
        )
    );
    assert!(
        findings[0]["remediation"]
            .to_string()
            .contains("mpi-operator"),
        "{report:#}"
    );
    // A timed-out test fails the run.
    assert_eq!(out.status.code(), Some(1));
    // The MPIJob is gone.
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );

    // Interrupted while it waits for the launcher.
    let actors = Actors::start(plane, &namespace, Cluster::Nothing);
    let child = validate_run(&plane.kubeconfig(), &plan.mpijob_only, &namespace, &[]);
    actors.wait_for(&format!("MPIJob/{MPIJOB}"), Duration::from_secs(30));
    interrupt(&child);
    let out = finish(child, Duration::from_secs(40));
    drop(actors.stop());
    let id = run_id(&out);
    // 128 + SIGINT, after the cleanup.
    assert_eq!(out.status.code(), Some(130));
    // The MPIJob is gone.
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );

    // A namespace that does not exist: the first creation is refused with
    // the server's words, which do not blame the MPI Operator.
    let missing = plane.unique_name("no-such-namespace");
    let out = finish(
        validate_run(&plane.kubeconfig(), &plan.mpijob_only, &missing, &[]),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A cluster that refuses the first creation is exit 2, with no report.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains(&format!("namespaces \"{missing}\" not found")),
        "{stderr}"
    );
    assert!(!stderr.contains("MPI Operator"), "{stderr}");
}

#[test]
fn without_the_mpijob_crd_the_run_says_what_discovery_says() {
    // A plane of its own: CRDs are cluster-wide, and the shared one has it.
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    let plan = plan();
    // The server's discovery: it serves no kubeflow.org/v2beta1 at all.
    let discovery = plane.kubectl_output(&["get", "--raw", "/apis/kubeflow.org/v2beta1"], None);
    assert!(!discovery.status.success());
    assert!(
        String::from_utf8_lossy(&discovery.stderr).contains("NotFound"),
        "{}",
        String::from_utf8_lossy(&discovery.stderr)
    );
    assert_eq!(
        plane.kubectl_ok(
            &["api-resources", "--api-group=kubeflow.org", "-o", "name"],
            None
        ),
        ""
    );
    let namespace = plane.namespace("validate-run");
    let out = finish(
        validate_run(
            &plane.kubeconfig(),
            &plan.mpijob_only,
            &namespace,
            &["--format", "json"],
        ),
        Duration::from_secs(60),
    );
    let report = report(&out);
    let findings = findings(&report);
    // The run agrees with discovery: nccl-tests is unknown, not failed,
    // and says why.
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["id"], "VAL110");
    assert_eq!(findings[0]["status"], "unknown");
    assert_eq!(
        findings[0]["message"],
        "not run: the MPI Operator is not installed (no kubeflow.org/v2beta1 MPIJob resource)"
    );
    // Unknown is not fail (README, Principles).
    assert_eq!(out.status.code(), Some(0));
    let id = run_id(&out);
    // Nothing was created, nothing is left.
    assert_eq!(
        leftovers(&plane, &id, &namespace, false),
        Vec::<String>::new()
    );
}

#[test]
fn a_role_short_of_the_documented_one_is_refused_in_the_servers_words_and_said_at_once() {
    let Some(plane) = plane() else {
        return;
    };
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let namespace = plane.namespace("validate-run");
    let documented = documented_role(&namespace);
    let pods = documented["rules"]
        .as_array()
        .unwrap()
        .iter()
        .position(|rule| rule["resources"] == json!(["pods"]))
        .expect("the documented Role has a rule for pods");
    let without = |verbs: &[&str]| {
        let mut role = documented.clone();
        let kept: Vec<Value> = role["rules"][pods]["verbs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| !verbs.contains(&v.as_str().unwrap()))
            .cloned()
            .collect();
        role["rules"][pods]["verbs"] = json!(kept);
        role
    };

    // Without list and watch on pods, the run cannot follow its pods: it
    // says so when the server refuses, not after its timeout.
    let kubeconfig = account(plane, &namespace, &without(&["list", "watch"]), dir.path());
    await_rbac(plane, &namespace, "create", "pods", true);
    await_rbac(plane, &namespace, "watch", "pods", false);
    let started = Instant::now();
    let out = finish(
        validate_run(&kubeconfig, &plan.full, &namespace, &["--timeout", "60s"]),
        Duration::from_secs(90),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Said well before the 60 s timeout.
    assert!(started.elapsed() < Duration::from_secs(30), "{stderr}");
    // A cluster that refuses is exit 2, with the server's own words.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot follow the run's pods in namespace {namespace}: 403: pods is forbidden: User \"system:serviceaccount:{namespace}:runner\" cannot list resource \"pods\""
        )),
        "{stderr}"
    );
    let id = run_id(&out);
    // The cleanup still ran (deletecollection is granted): nothing is left.
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );

    // Without deletecollection, the cleanup fails: exit 2, with what to
    // delete by hand.
    plane.apply(&without(&["deletecollection"]).to_string());
    await_rbac(plane, &namespace, "deletecollection", "pods", false);
    await_rbac(plane, &namespace, "watch", "pods", true);
    let out = finish(
        validate_run(&kubeconfig, &plan.full, &namespace, &["--timeout", "2s"]),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let id = run_id(&out);
    // A cleanup that failed is exit 2 (docs/validate.md, Cleanup).
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let by_hand = format!("kubectl -n {namespace} delete pods,mpijobs -l {RUN_LABEL}={id}");
    assert!(
        stderr.contains(&format!(
            "cleanup failed (403: pods is forbidden: User \"system:serviceaccount:{namespace}:runner\" cannot deletecollection resource \"pods\""
        )) && stderr.contains(&by_hand),
        "{stderr}"
    );
    // It is left, as said, and the command it gives deletes it.
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        [format!("pod/{SERVER0}"), format!("pod/{SERVER0}")]
    );
    let words: Vec<&str> = by_hand.split(' ').skip(1).collect();
    plane.kubectl_ok(&words, None);
    assert_eq!(
        leftovers(plane, &id, &namespace, true),
        Vec::<String>::new()
    );
}
