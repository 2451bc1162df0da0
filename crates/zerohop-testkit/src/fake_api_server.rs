//! A stateful Kubernetes API server in memory, served over HTTP on
//! `127.0.0.1`, for end-to-end tests of the real `agent` and `fleet`
//! binaries where no kube-apiserver can run.
//!
//! It implements what those binaries use, with the API server's semantics:
//! Nodes (get, paginated list with label selectors, watch, server-side
//! apply of `status.conditions` as a list map keyed by `type`, and a
//! strategic merge patch of the status), events (create, get, merge patch;
//! 409 on a name that exists) and `DataPathReport` objects (apply,
//! paginated list, watch, delete of the collection; 404 while the CRD is
//! not installed), and for `zerohop validate run`: Pods (create,
//! get, list and watch by label and name, delete by label, logs) that
//! follow a script the test gives, and Kubeflow `MPIJob`s (create, delete
//! by label; 404 while their CRD is not installed) whose launcher pod the
//! server creates as the MPI Operator would. Every request is recorded,
//! and faults (a status, with or without `Retry-After`, a delay, a huge
//! body) can be injected by path.
//!
//! Like kube-apiserver serving from its watch cache, it serialises each
//! object once, when it is written, and a list page or a watch event
//! sends those bytes as they are; a page is the objects after the key in
//! the continue token (what etcd's continue token holds), so listing a
//! large cluster page by page costs the server its pages, not a copy of
//! the whole list per page.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, oneshot};
use zerohop_known::zerohop_api::{API_VERSION, GROUP, PLURAL, VERSION};

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// `GET`, `PATCH`…
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The body as text.
    pub body: String,
}

/// A fault to inject into the requests whose path starts with a prefix.
#[derive(Debug, Clone, Default)]
pub struct Fault {
    /// The method it applies to; `None` for every method.
    pub method: Option<String>,
    /// The path prefix it applies to (`/api/v1/nodes`).
    pub path_prefix: String,
    /// How many requests it applies to; `None` for all of them.
    pub times: Option<usize>,
    /// Answer with this status and a `Status` body.
    pub status: Option<u16>,
    /// Wait this long before answering.
    pub delay: Option<Duration>,
    /// Answer 200 with a body of this many bytes (of JSON whitespace).
    pub huge_body: Option<usize>,
    /// With `status`, answer as kube-apiserver's max-in-flight and
    /// priority-and-fairness filters do when they shed load: a
    /// `Retry-After` header of this many seconds and a plain-text body, no
    /// `Status` (`tooManyRequests` in
    /// `staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go`).
    pub retry_after: Option<u64>,
}

/// One step of a scripted pod's life, applied in order after it is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodStep {
    /// The scheduler binds it to this node.
    Schedule(String),
    /// The scheduler cannot place it; the `PodScheduled` condition says why.
    Unschedulable(String),
    /// Its container runs; the pod has this IP address.
    Run(String),
    /// Its container exits 0.
    Succeed,
    /// Its container exits 1 with this reason.
    Fail(String),
    /// Nothing changes for this long.
    Pause(Duration),
}

/// What a created pod does: its steps and the log its container writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodScript {
    /// The steps, applied one after another.
    pub steps: Vec<PodStep>,
    /// What `pods/log` returns.
    pub log: String,
}

/// Decides the script of each pod created, from the pod as created.
pub type Scripter = Arc<dyn Fn(&Value) -> PodScript + Send + Sync>;

/// An object as the watch cache keeps it: the object, and its JSON
/// serialised once when it was written.
#[derive(Debug)]
struct Stored {
    value: Value,
    json: Bytes,
}

#[derive(Debug, Clone)]
struct Change {
    resource: &'static str,
    kind: &'static str,
    object: Arc<Stored>,
}

/// Objects of a listed resource by key: the name, or `namespace/name`.
type Objects = BTreeMap<String, Arc<Stored>>;

#[derive(Default)]
struct Store {
    nodes: Objects,
    pods: Objects,
    logs: BTreeMap<String, String>,
    mpijobs: BTreeMap<(String, String), Value>,
    mpijob_crd_installed: bool,
    scripter: Option<Scripter>,
    events: BTreeMap<(String, String), Value>,
    reports: Objects,
    crd_installed: bool,
    revision: u64,
    log: Vec<(u64, Change)>,
    requests: Vec<Recorded>,
    faults: Vec<Fault>,
}

impl Store {
    fn bump(&mut self, object: &mut Value) -> u64 {
        self.revision += 1;
        object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
        self.revision
    }

    /// The objects of a listed resource: `nodes`, `pods` or the reports.
    fn objects(&mut self, resource: &str) -> &mut Objects {
        match resource {
            "nodes" => &mut self.nodes,
            "pods" => &mut self.pods,
            _ => &mut self.reports,
        }
    }

    /// Writes an object of a listed resource at a new resourceVersion (or
    /// removes it, when `deleted`), serialises it once, records the change
    /// for later watches and announces it to the open ones.
    fn write(
        &mut self,
        changes: &broadcast::Sender<Change>,
        resource: &'static str,
        deleted: bool,
        mut object: Value,
    ) -> Arc<Stored> {
        let revision = self.bump(&mut object);
        let key = key_of(&object);
        let json = Bytes::from(object.to_string());
        let stored = Arc::new(Stored {
            value: object,
            json,
        });
        let objects = self.objects(resource);
        let kind = if deleted {
            objects.remove(&key);
            "DELETED"
        } else if objects.insert(key, Arc::clone(&stored)).is_some() {
            "MODIFIED"
        } else {
            "ADDED"
        };
        let change = Change {
            resource,
            kind,
            object: Arc::clone(&stored),
        };
        self.log.push((revision, change.clone()));
        let _ = changes.send(change);
        stored
    }

    /// Creates a pod: stores it, and plays its script in the background.
    fn create_pod(
        &mut self,
        store: &Arc<Mutex<Store>>,
        changes: &broadcast::Sender<Change>,
        namespace: &str,
        mut pod: Value,
    ) -> Result<Arc<Stored>, Box<Response<Body>>> {
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let key = format!("{namespace}/{name}");
        if name.is_empty() {
            return Err(Box::new(status(
                422,
                "Invalid",
                "metadata.name: Required value",
            )));
        }
        if self.pods.contains_key(&key) {
            return Err(Box::new(status(
                409,
                "AlreadyExists",
                &format!("pods \"{name}\" already exists"),
            )));
        }
        pod["metadata"]["namespace"] = json!(namespace);
        pod["metadata"]["uid"] = json!(format!("uid-pod-{namespace}-{name}"));
        pod["status"] = json!({"phase": "Pending"});
        let pod = self.write(changes, "pods", false, pod);
        let script = self
            .scripter
            .as_ref()
            .map(|scripter| scripter(&pod.value))
            .unwrap_or_default();
        self.logs.insert(key.clone(), script.log.clone());
        let store = Arc::clone(store);
        let changes = changes.clone();
        tokio::spawn(async move {
            for step in script.steps {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if let PodStep::Pause(pause) = step {
                    tokio::time::sleep(pause).await;
                    continue;
                }
                let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
                // A pod deleted meanwhile has no further life.
                let Some(mut pod) = store.pods.get(&key).map(|pod| pod.value.clone()) else {
                    return;
                };
                apply_step(&mut pod, &step);
                store.write(&changes, "pods", false, pod);
            }
        });
        Ok(pod)
    }
}

/// The key of an object: `namespace/name`, or its name when it is not
/// namespaced.
fn key_of(object: &Value) -> String {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// What the kubelet and the scheduler would write into the pod's status.
fn apply_step(pod: &mut Value, step: &PodStep) {
    let container = pod["spec"]["containers"][0]["name"].clone();
    match step {
        PodStep::Schedule(node) => {
            pod["spec"]["nodeName"] = json!(node);
            pod["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "True"}]);
        }
        PodStep::Unschedulable(message) => {
            pod["status"]["conditions"] = json!([{
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
            }]);
        }
        PodStep::Run(ip) => {
            pod["status"]["phase"] = json!("Running");
            pod["status"]["podIP"] = json!(ip);
            pod["status"]["containerStatuses"] = json!([{
                "name": container, "ready": true, "restartCount": 0,
                "image": "", "imageID": "",
                "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
            }]);
        }
        PodStep::Pause(_) => {}
        PodStep::Succeed | PodStep::Fail(_) => {
            let (phase, code, reason) = match step {
                PodStep::Fail(reason) => ("Failed", 1, reason.as_str()),
                _ => ("Succeeded", 0, "Completed"),
            };
            pod["status"]["phase"] = json!(phase);
            pod["status"]["containerStatuses"] = json!([{
                "name": container, "ready": false, "restartCount": 0,
                "image": "", "imageID": "",
                "state": {"terminated": {"exitCode": code, "reason": reason}},
            }]);
        }
    }
}

/// The launcher pod the MPI Operator makes of an `MPIJob`.
fn launcher_pod(job: &Value) -> Value {
    let template = &job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"];
    let mut metadata = template["metadata"].clone();
    if !metadata.is_object() {
        metadata = json!({});
    }
    metadata["name"] = json!(format!(
        "{}-launcher",
        job["metadata"]["name"].as_str().unwrap_or_default()
    ));
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]})
}

/// The running server; stops when dropped.
pub struct FakeApiServer {
    address: SocketAddr,
    store: Arc<Mutex<Store>>,
    changes: broadcast::Sender<Change>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl FakeApiServer {
    /// Starts a server on an unused port of `127.0.0.1`.
    pub fn start() -> FakeApiServer {
        let store = Arc::new(Mutex::new(Store::default()));
        let (changes, _) = broadcast::channel::<Change>(1024);
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel();
        let served = Arc::clone(&store);
        let announced = changes.clone();
        let thread = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the fake API server");
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
                address_tx
                    .send(listener.local_addr().expect("an address"))
                    .expect("the starter waits");
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let store = Arc::clone(&served);
                        let changes = announced.clone();
                        tokio::spawn(async move {
                            let service = service_fn(move |request| {
                                let store = Arc::clone(&store);
                                let changes = changes.clone();
                                async move {
                                    Ok::<_, Infallible>(handle(store, changes, request).await)
                                }
                            });
                            let _ = http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        });
                    }
                };
                tokio::select! {
                    () = accept => {}
                    _ = stopped => {}
                }
            });
        });
        let address = address_rx.recv().expect("the server started");
        FakeApiServer {
            address,
            store,
            changes,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Writes a kubeconfig for this server into `dir` and returns its path.
    pub fn write_kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n\
             users:\n- name: tester\n  user:\n    token: test-token\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: tester\n\
             current-context: fake\n",
            self.url()
        );
        std::fs::write(&path, text).expect("the kubeconfig is written");
        path
    }

    /// Adds (or replaces) a Node.
    pub fn put_node(&self, mut node: Value) {
        let mut store = self.store();
        let name = node["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if node["metadata"]["uid"].is_null() {
            node["metadata"]["uid"] = json!(format!("uid-{name}"));
        }
        // Watches that are open see it now; later ones read it from the log.
        store.write(&self.changes, "nodes", false, node);
    }

    /// The Node named `name`.
    pub fn node(&self, name: &str) -> Option<Value> {
        self.store().nodes.get(name).map(|node| node.value.clone())
    }

    /// Installs (or removes) the `DataPathReport` CRD.
    pub fn set_report_crd(&self, installed: bool) {
        self.store().crd_installed = installed;
    }

    /// Stores a `DataPathReport` as if its agent had applied it (a large
    /// fleet is set up without a request per object).
    pub fn put_report(&self, mut report: Value) {
        let mut store = self.store();
        let name = report["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        report["metadata"]["uid"] = json!(format!("uid-report-{name}"));
        store.write(&self.changes, PLURAL, false, report);
    }

    /// The `DataPathReport` named `name`.
    pub fn report(&self, name: &str) -> Option<Value> {
        self.store()
            .reports
            .get(name)
            .map(|report| report.value.clone())
    }

    /// Every event, in name order.
    pub fn events(&self) -> Vec<Value> {
        self.store().events.values().cloned().collect()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.store().requests.clone()
    }

    /// Injects a fault.
    pub fn inject(&self, fault: Fault) {
        self.store().faults.push(fault);
    }

    /// Removes every fault.
    pub fn clear_faults(&self) {
        self.store().faults.clear();
    }

    /// Installs (or removes) the Kubeflow `MPIJob` CRD.
    pub fn set_mpijob_crd(&self, installed: bool) {
        self.store().mpijob_crd_installed = installed;
    }

    /// Gives every pod created from now on the script `scripter` returns
    /// for it; without one, pods stay pending.
    pub fn script_pods(&self, scripter: Scripter) {
        self.store().scripter = Some(scripter);
    }

    /// Every pod that exists now, in `namespace/name` order.
    pub fn pods(&self) -> Vec<Value> {
        self.store()
            .pods
            .values()
            .map(|pod| pod.value.clone())
            .collect()
    }

    /// Every `MPIJob` that exists now.
    pub fn mpijobs(&self) -> Vec<Value> {
        self.store().mpijobs.values().cloned().collect()
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn full(status: StatusCode, body: Value) -> Response<Body> {
    json_response(status, Bytes::from(body.to_string()))
}

/// A JSON answer of bytes already serialised.
fn json_response(status: StatusCode, json: Bytes) -> Response<Body> {
    let mut response = Response::new(
        Full::new(json)
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn status(code: u16, reason: &str, message: &str) -> Response<Body> {
    full(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }),
    )
}

fn query(uri: &hyper::Uri) -> BTreeMap<String, String> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key.to_owned(), percent_decode(value))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn handle(
    store: Arc<Mutex<Store>>,
    changes: broadcast::Sender<Change>,
    request: Request<Incoming>,
) -> Response<Body> {
    let method = request.method().clone();
    let uri = request.uri().clone();
    let content_type = request
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match request.into_body().collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(_) => String::new(),
    };
    let fault = {
        let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
        store.requests.push(Recorded {
            method: method.to_string(),
            uri: uri.to_string(),
            content_type: content_type.clone(),
            body: body.clone(),
        });
        take_fault(&mut store, &method, uri.path())
    };
    if let Some(fault) = fault {
        if let Some(delay) = fault.delay {
            tokio::time::sleep(delay).await;
        }
        if let Some(code) = fault.status {
            let Some(seconds) = fault.retry_after else {
                return status(code, "Injected", "injected by the test");
            };
            let mut response = Response::new(
                Full::new(Bytes::from_static(
                    b"Too many requests, please try again later.\n",
                ))
                .map_err(|never| match never {})
                .boxed_unsync(),
            );
            *response.status_mut() =
                StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            response.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                hyper::header::HeaderValue::from(seconds),
            );
            return response;
        }
        if let Some(size) = fault.huge_body {
            let mut response = Response::new(
                Full::new(Bytes::from(vec![b' '; size]))
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            );
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            return response;
        }
    }
    let store_handle = Arc::clone(&store);
    let query = query(&uri);
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    match (method.clone(), segments.as_slice()) {
        (Method::GET, ["api", "v1", "nodes"]) => {
            if query.contains_key("watch") && query["watch"] != "false" && query["watch"] != "0" {
                return watch(&store, &changes, "nodes", &query);
            }
            list(&store, "nodes", "NodeList", "v1", &query)
        }
        (Method::GET, ["api", "v1", "nodes", name]) => {
            let store = store.lock().unwrap_or_else(|p| p.into_inner());
            match store.nodes.get(*name) {
                Some(node) => json_response(StatusCode::OK, node.json.clone()),
                None => status(404, "NotFound", &format!("nodes \"{name}\" not found")),
            }
        }
        (Method::PATCH, ["api", "v1", "nodes", name, "status"])
            if content_type.as_deref() == Some(STRATEGIC_MERGE_PATCH) =>
        {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let Some(mut node) = store.nodes.get(*name).map(|node| node.value.clone()) else {
                return status(404, "NotFound", &format!("nodes \"{name}\" not found"));
            };
            if let Err(message) = strategic_merge(&mut node, &body, "") {
                return status(422, "Invalid", &message);
            }
            let node = store.write(&changes, "nodes", false, node);
            json_response(StatusCode::OK, node.json.clone())
        }
        (Method::PATCH, ["api", "v1", "nodes", name, "status"]) => {
            if content_type.as_deref() != Some("application/apply-patch+yaml") {
                return status(
                    415,
                    "UnsupportedMediaType",
                    "only server-side apply and strategic merge patches are served",
                );
            }
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let Some(mut node) = store.nodes.get(*name).map(|node| node.value.clone()) else {
                return status(404, "NotFound", &format!("nodes \"{name}\" not found"));
            };
            let applied = body["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut conditions = node["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for condition in applied {
                match conditions
                    .iter_mut()
                    .find(|c| c["type"] == condition["type"])
                {
                    Some(slot) => *slot = condition,
                    None => conditions.push(condition),
                }
            }
            node["status"]["conditions"] = Value::Array(conditions);
            let node = store.write(&changes, "nodes", false, node);
            json_response(StatusCode::OK, node.json.clone())
        }
        (
            Method::POST,
            [
                "apis",
                "events.k8s.io",
                "v1",
                "namespaces",
                namespace,
                "events",
            ],
        ) => {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let name = body["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let key = ((*namespace).to_owned(), name.clone());
            if store.events.contains_key(&key) {
                return status(
                    409,
                    "AlreadyExists",
                    &format!("events.events.k8s.io \"{name}\" already exists"),
                );
            }
            let mut event = body;
            event["metadata"]["namespace"] = json!(namespace);
            store.bump(&mut event);
            store.events.insert(key, event.clone());
            full(StatusCode::CREATED, event)
        }
        (
            Method::GET,
            [
                "apis",
                "events.k8s.io",
                "v1",
                "namespaces",
                namespace,
                "events",
                name,
            ],
        ) => {
            let store = store.lock().unwrap_or_else(|p| p.into_inner());
            match store
                .events
                .get(&((*namespace).to_owned(), (*name).to_owned()))
            {
                Some(event) => full(StatusCode::OK, event.clone()),
                None => status(404, "NotFound", "event not found"),
            }
        }
        (
            Method::PATCH,
            [
                "apis",
                "events.k8s.io",
                "v1",
                "namespaces",
                namespace,
                "events",
                name,
            ],
        ) => {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let key = ((*namespace).to_owned(), (*name).to_owned());
            let Some(mut event) = store.events.get(&key).cloned() else {
                return status(404, "NotFound", "event not found");
            };
            merge_patch(&mut event, &body);
            store.bump(&mut event);
            store.events.insert(key, event.clone());
            full(StatusCode::OK, event)
        }
        (_, ["apis", GROUP, VERSION, PLURAL, ..])
            if !store
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .crd_installed =>
        {
            status(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
        (Method::GET, ["apis", GROUP, VERSION, PLURAL]) => {
            if query.get("watch").is_some_and(|w| w != "false" && w != "0") {
                return watch(&store, &changes, PLURAL, &query);
            }
            list(&store, PLURAL, "DataPathReportList", API_VERSION, &query)
        }
        (Method::DELETE, ["apis", GROUP, VERSION, PLURAL]) => {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let selector = query.get("labelSelector");
            let doomed: Vec<Arc<Stored>> = store
                .reports
                .values()
                .filter(|report| {
                    selector.is_none_or(|selector| {
                        selects(selector, &report.value["metadata"]["labels"]) == Some(true)
                    })
                })
                .cloned()
                .collect();
            for report in &doomed {
                store.write(&changes, PLURAL, true, report.value.clone());
            }
            json_response(
                StatusCode::OK,
                list_body(
                    API_VERSION,
                    "DataPathReportList",
                    &json!({ "resourceVersion": store.revision.to_string() }),
                    &doomed,
                ),
            )
        }
        (Method::PATCH, ["apis", GROUP, VERSION, PLURAL, name]) => {
            if content_type.as_deref() != Some("application/apply-patch+yaml") {
                return status(
                    415,
                    "UnsupportedMediaType",
                    "only server-side apply is served",
                );
            }
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let mut object = body;
            object["metadata"]["uid"] = store.reports.get(*name).map_or_else(
                || json!(format!("uid-report-{name}")),
                |e| e.value["metadata"]["uid"].clone(),
            );
            let object = store.write(&changes, PLURAL, false, object);
            json_response(StatusCode::OK, object.json.clone())
        }
        (Method::POST, ["api", "v1", "namespaces", namespace, "pods"]) => {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            match store.create_pod(&store_handle, &changes, namespace, body) {
                Ok(pod) => json_response(StatusCode::CREATED, pod.json.clone()),
                Err(response) => *response,
            }
        }
        (Method::GET, ["api", "v1", "namespaces", namespace, "pods"]) => {
            if query.get("watch").is_some_and(|w| w != "false" && w != "0") {
                return watch_in(&store, &changes, "pods", Some(namespace), &query);
            }
            list(&store, "pods", "PodList", "v1", &query)
        }
        (Method::GET, ["api", "v1", "namespaces", namespace, "pods", name]) => {
            let store = store.lock().unwrap_or_else(|p| p.into_inner());
            match store.pods.get(&format!("{namespace}/{name}")) {
                Some(pod) => json_response(StatusCode::OK, pod.json.clone()),
                None => status(404, "NotFound", &format!("pods \"{name}\" not found")),
            }
        }
        (Method::GET, ["api", "v1", "namespaces", namespace, "pods", name, "log"]) => {
            let store = store.lock().unwrap_or_else(|p| p.into_inner());
            let key = format!("{namespace}/{name}");
            match (store.pods.get(&key), store.logs.get(&key)) {
                (Some(_), Some(log)) => {
                    let limit = query
                        .get("limitBytes")
                        .and_then(|l| l.parse::<usize>().ok())
                        .unwrap_or(usize::MAX);
                    let bytes = &log.as_bytes()[..log.len().min(limit)];
                    let mut response = Response::new(
                        Full::new(Bytes::copy_from_slice(bytes))
                            .map_err(|never| match never {})
                            .boxed_unsync(),
                    );
                    response.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static("text/plain"),
                    );
                    response
                }
                _ => status(404, "NotFound", &format!("pods \"{name}\" not found")),
            }
        }
        (Method::DELETE, ["api", "v1", "namespaces", namespace, "pods"]) => {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let Some(selector) = query.get("labelSelector") else {
                return status(400, "BadRequest", "a label selector is required here");
            };
            let doomed: Vec<Arc<Stored>> = store
                .pods
                .values()
                .filter(|pod| {
                    pod.value["metadata"]["namespace"] == *namespace
                        && selects(selector, &pod.value["metadata"]["labels"]) == Some(true)
                })
                .cloned()
                .collect();
            for pod in &doomed {
                store.write(&changes, "pods", true, pod.value.clone());
            }
            json_response(
                StatusCode::OK,
                list_body("v1", "PodList", &json!({}), &doomed),
            )
        }
        (_, ["apis", "kubeflow.org", "v2beta1", ..])
            if !store
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .mpijob_crd_installed =>
        {
            status(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
        (
            Method::POST,
            [
                "apis",
                "kubeflow.org",
                "v2beta1",
                "namespaces",
                namespace,
                "mpijobs",
            ],
        ) => {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let name = body["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let key = ((*namespace).to_owned(), name.clone());
            if store.mpijobs.contains_key(&key) {
                return status(
                    409,
                    "AlreadyExists",
                    &format!("mpijobs.kubeflow.org \"{name}\" already exists"),
                );
            }
            let mut job = body;
            job["metadata"]["namespace"] = json!(namespace);
            job["metadata"]["uid"] = json!(format!("uid-mpijob-{namespace}-{name}"));
            store.bump(&mut job);
            store.mpijobs.insert(key, job.clone());
            // The operator's part: the launcher (workers are not modelled).
            if let Err(response) =
                store.create_pod(&store_handle, &changes, namespace, launcher_pod(&job))
            {
                return *response;
            }
            full(StatusCode::CREATED, job)
        }
        (
            Method::DELETE,
            [
                "apis",
                "kubeflow.org",
                "v2beta1",
                "namespaces",
                namespace,
                "mpijobs",
            ],
        ) => {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let Some(selector) = query.get("labelSelector") else {
                return status(400, "BadRequest", "a label selector is required here");
            };
            let doomed: Vec<(String, String)> = store
                .mpijobs
                .iter()
                .filter(|((ns, _), job)| {
                    ns == namespace && selects(selector, &job["metadata"]["labels"]) == Some(true)
                })
                .map(|(key, _)| key.clone())
                .collect();
            let items: Vec<Value> = doomed
                .iter()
                .filter_map(|key| store.mpijobs.remove(key))
                .collect();
            full(
                StatusCode::OK,
                json!({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJobList", "metadata": {}, "items": items}),
            )
        }
        _ => status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
    }
}

fn take_fault(store: &mut Store, method: &Method, path: &str) -> Option<Fault> {
    let index = store.faults.iter().position(|fault| {
        path.starts_with(&fault.path_prefix)
            && fault.method.as_deref().is_none_or(|m| m == method.as_str())
            && fault.times != Some(0)
    })?;
    let fault = &mut store.faults[index];
    if let Some(times) = fault.times.as_mut() {
        *times -= 1;
    }
    Some(fault.clone())
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (key, value) in fields {
        if value.is_null() {
            if let Some(map) = target.as_object_mut() {
                map.remove(key);
            }
        } else {
            merge_patch(&mut target[key.as_str()], value);
        }
    }
}

/// The content type of a strategic merge patch.
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// The lists of a Node that a strategic merge patch merges by a key, with
/// that key: the `patchStrategy:"merge"` fields of `NodeStatus`
/// (`patchMergeKey:"type"` on `conditions` and `addresses`,
/// k8s.io/api/core/v1/types.go). Every other list is replaced whole, as
/// for a field without a patch strategy.
const MERGED_LISTS: [(&str, &str); 2] = [
    ("/status/conditions", "type"),
    ("/status/addresses", "type"),
];

/// A strategic merge patch of a Node (the API conventions' "Strategic
/// Merge Patch", community/contributors/devel/sig-api-machinery/
/// strategic-merge-patch.md): objects merge as in a JSON merge patch,
/// `null` deletes a field, a list in [`MERGED_LISTS`] merges element by
/// element on its key, and an element `{"<key>": …, "$patch": "delete"}`
/// deletes the element with that key. `path` is where `target` is, as a
/// JSON pointer.
fn strategic_merge(target: &mut Value, patch: &Value, path: &str) -> Result<(), String> {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (key, value) in fields {
        let here = format!("{path}/{key}");
        let merge_key = MERGED_LISTS
            .iter()
            .find(|(list, _)| *list == here)
            .map(|(_, merge_key)| *merge_key);
        match (value, merge_key) {
            (Value::Null, _) => {
                if let Some(map) = target.as_object_mut() {
                    map.remove(key);
                }
            }
            (Value::Array(elements), Some(merge_key)) => {
                let list = &mut target[key.as_str()];
                if !list.is_array() {
                    *list = json!([]);
                }
                let Some(list) = list.as_array_mut() else {
                    continue;
                };
                for element in elements {
                    merge_element(list, element, merge_key)
                        .map_err(|why| format!("{here}: {why}"))?;
                }
            }
            _ => strategic_merge(&mut target[key.as_str()], value, &here)?,
        }
    }
    Ok(())
}

/// Merges one element of a patch into a list merged on `merge_key`.
fn merge_element(list: &mut Vec<Value>, element: &Value, merge_key: &str) -> Result<(), String> {
    let Some(wanted) = element.get(merge_key).filter(|k| !k.is_null()) else {
        return Err(format!("an element without its merge key {merge_key}"));
    };
    let position = list.iter().position(|e| e.get(merge_key) == Some(wanted));
    match (element.get("$patch").and_then(Value::as_str), position) {
        (Some("delete"), Some(position)) => {
            list.remove(position);
        }
        (Some("delete"), None) => {}
        (Some(other), _) => return Err(format!("unknown patch directive {other:?}")),
        (None, Some(position)) => merge_patch(&mut list[position], element),
        (None, None) => list.push(element.clone()),
    }
    Ok(())
}

/// Whether `labels` match a selector of `k=v`, `k==v`, `k!=v`, `k` and
/// `!k` terms; `None` for a selector this server does not understand.
fn selects(selector: &str, labels: &Value) -> Option<bool> {
    let mut all = true;
    for term in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let matched = if let Some((key, value)) = term.split_once("!=") {
            labels[key.trim()].as_str() != Some(value.trim())
        } else if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
            labels[key.trim()].as_str() == Some(value.trim())
        } else if let Some(key) = term.strip_prefix('!') {
            labels[key.trim()].is_null()
        } else if term.contains(' ') || term.contains('(') {
            return None;
        } else {
            !labels[term].is_null()
        };
        all &= matched;
    }
    Some(all)
}

/// A page of a list: the objects after the key in the `continue` token
/// that match the selectors, at most `limit` of them, their JSON as it was
/// serialised when they were written; a continue token when more match.
fn list(
    store: &Arc<Mutex<Store>>,
    resource: &'static str,
    kind: &str,
    api_version: &str,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
    let selector = query.get("labelSelector");
    if let Some(selector) = selector
        && selects(selector, &Value::Null).is_none()
    {
        return status(
            400,
            "BadRequest",
            &format!("unable to parse requirement: {selector}"),
        );
    }
    let revision = store.revision;
    let after = match query.get("continue") {
        Some(key) => Bound::Excluded(key.as_str()),
        None => Bound::Unbounded,
    };
    let limit: usize = query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let mut matching = store
        .objects(resource)
        .range::<str, _>((after, Bound::Unbounded))
        .filter(|(_, object)| {
            field_selects(query, &object.value)
                && selector.is_none_or(|selector| {
                    selects(selector, &object.value["metadata"]["labels"]) == Some(true)
                })
        });
    let page: Vec<(&String, &Arc<Stored>)> = matching.by_ref().take(limit).collect();
    let mut metadata = json!({ "resourceVersion": revision.to_string() });
    if matching.next().is_some()
        && let Some((last, _)) = page.last()
    {
        metadata["continue"] = json!(last);
    }
    let items: Vec<Arc<Stored>> = page.into_iter().map(|(_, o)| Arc::clone(o)).collect();
    json_response(
        StatusCode::OK,
        list_body(api_version, kind, &metadata, &items),
    )
}

/// A list's JSON, its items' stored JSON copied in as they are.
fn list_body(api_version: &str, kind: &str, metadata: &Value, items: &[Arc<Stored>]) -> Bytes {
    let head = format!(
        r#"{{"apiVersion":{},"kind":{},"metadata":{metadata},"items":["#,
        json!(api_version),
        json!(kind)
    );
    let size = head.len() + items.iter().map(|i| i.json.len() + 1).sum::<usize>() + 2;
    let mut body = Vec::with_capacity(size);
    body.extend_from_slice(head.as_bytes());
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&item.json);
    }
    body.extend_from_slice(b"]}");
    Bytes::from(body)
}

/// Whether `object` matches the `metadata.name=` field selector of `query`
/// (the only field selector served), or there is none.
fn field_selects(query: &BTreeMap<String, String>, object: &Value) -> bool {
    query.get("fieldSelector").is_none_or(|selector| {
        selector
            .strip_prefix("metadata.name=")
            .is_some_and(|name| object["metadata"]["name"].as_str() == Some(name))
    })
}

/// A watch of a cluster-scoped resource.
fn watch(
    store: &Arc<Mutex<Store>>,
    changes: &broadcast::Sender<Change>,
    resource: &'static str,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    watch_in(store, changes, resource, None, query)
}

/// A watch: the changes after `resourceVersion`, then every new one, as
/// newline-separated JSON events, until `timeoutSeconds` (at most 60 s);
/// only objects in `namespace` (when given) that match the label and field
/// selectors.
fn watch_in(
    store: &Arc<Mutex<Store>>,
    changes: &broadcast::Sender<Change>,
    resource: &'static str,
    namespace: Option<&str>,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let namespace = namespace.map(str::to_owned);
    let filter = query.clone();
    let wanted = move |change: &Change| {
        let object = &change.object.value;
        change.resource == resource
            && namespace
                .as_deref()
                .is_none_or(|ns| object["metadata"]["namespace"].as_str() == Some(ns))
            && field_selects(&filter, object)
            && filter.get("labelSelector").is_none_or(|selector| {
                selects(selector, &object["metadata"]["labels"]) == Some(true)
            })
    };
    let since: u64 = query
        .get("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let seconds: u64 = query
        .get("timeoutSeconds")
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
        .min(60);
    let mut receiver = changes.subscribe();
    let backlog: Vec<Change> = {
        let store = store.lock().unwrap_or_else(|p| p.into_inner());
        store
            .log
            .iter()
            .filter(|(revision, change)| *revision > since && wanted(change))
            .map(|(_, change)| change.clone())
            .collect()
    };
    let (sender, frames) = tokio::sync::mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        // The event around the object's stored JSON.
        let line = |change: &Change| {
            let head = format!(r#"{{"type":"{}","object":"#, change.kind);
            let json = &change.object.json;
            let mut event = Vec::with_capacity(head.len() + json.len() + 2);
            event.extend_from_slice(head.as_bytes());
            event.extend_from_slice(json);
            event.extend_from_slice(b"}\n");
            Bytes::from(event)
        };
        for change in &backlog {
            if sender.send(line(change)).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(Duration::from_secs(seconds));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                () = &mut deadline => return,
                change = receiver.recv() => match change {
                    Ok(change) if wanted(&change) => {
                        if sender.send(line(&change)).await.is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    let stream = futures::stream::unfold(frames, |mut frames| async move {
        frames
            .recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(Frame::data(bytes)), frames))
    });
    let mut response = Response::new(BodyExt::boxed_unsync(StreamBody::new(stream.boxed())));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_like_the_api_server() {
        let labels = json!({ "a": "1", "b": "2" });
        assert_eq!(selects("a=1", &labels), Some(true));
        assert_eq!(selects("a==1,b=2", &labels), Some(true));
        assert_eq!(selects("a!=1", &labels), Some(false));
        assert_eq!(selects("c", &labels), Some(false));
        assert_eq!(selects("!c", &labels), Some(true));
        assert_eq!(selects("a in (1)", &labels), None);
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut target = json!({ "a": 1, "b": { "c": 2, "d": 3 } });
        merge_patch(
            &mut target,
            &json!({ "a": null, "b": { "c": 5 }, "e": [1] }),
        );
        assert_eq!(target, json!({ "b": { "c": 5, "d": 3 }, "e": [1] }));
    }

    #[test]
    fn a_strategic_merge_patch_deletes_one_condition_by_its_type() {
        let mut node = json!({ "metadata": { "name": "n" }, "status": {
            "conditions": [{ "type": "Ready", "status": "True" },
                           { "type": "zerohop.dev/DataPathReady", "status": "False" }],
            "images": [{ "names": ["a"] }] } });
        let patch = json!({ "status": {
            "conditions": [{ "type": "zerohop.dev/DataPathReady", "$patch": "delete" },
                           { "type": "Ready", "reason": "KubeletReady" }],
            "images": [] } });
        strategic_merge(&mut node, &patch, "").unwrap();
        assert_eq!(
            node["status"],
            json!({ "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady" }],
                    "images": [] })
        );
        // Deleting what is not there is no error; an element without its
        // merge key or with an unknown directive is.
        let absent = json!({ "status": { "conditions": [{ "type": "X", "$patch": "delete" }] } });
        assert!(strategic_merge(&mut node, &absent, "").is_ok());
        let keyless = json!({ "status": { "conditions": [{ "$patch": "delete" }] } });
        assert!(strategic_merge(&mut node, &keyless, "").is_err());
        let unknown =
            json!({ "status": { "conditions": [{ "type": "Ready", "$patch": "replace" }] } });
        assert!(strategic_merge(&mut node, &unknown, "").is_err());
    }

    fn body_of(response: Response<Body>) -> Value {
        let bytes = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(response.into_body().collect())
            .unwrap()
            .to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_list_is_paged_by_the_key_after_the_last_one_sent() {
        let store = Arc::new(Mutex::new(Store::default()));
        let (changes, _) = broadcast::channel(16);
        for name in ["a", "b", "c", "d", "e"] {
            let labels = json!({ "odd": (name != "b" && name != "d").to_string() });
            let node = json!({ "metadata": { "name": name, "labels": labels } });
            store.lock().unwrap().write(&changes, "nodes", false, node);
        }
        let page = |query: &[(&str, &str)]| {
            let query = query
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            body_of(list(&store, "nodes", "NodeList", "v1", &query))
        };
        let names = |page: &Value| -> Vec<String> {
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let first = page(&[("limit", "2")]);
        assert_eq!(names(&first), ["a", "b"]);
        assert_eq!(first["metadata"]["continue"], "b");
        assert_eq!(first["items"][0]["metadata"]["resourceVersion"], "1");
        let last = page(&[("limit", "3"), ("continue", "b")]);
        assert_eq!(names(&last), ["c", "d", "e"]);
        assert!(last["metadata"]["continue"].is_null(), "{last}");
        // A selector pages over the matching objects only.
        let odd = page(&[("limit", "2"), ("labelSelector", "odd=true")]);
        assert_eq!(names(&odd), ["a", "c"]);
        assert_eq!(odd["metadata"]["continue"], "c");
        let rest = page(&[
            ("limit", "2"),
            ("labelSelector", "odd=true"),
            ("continue", "c"),
        ]);
        assert_eq!(names(&rest), ["e"]);
        assert!(rest["metadata"]["continue"].is_null());
        let bad = list(
            &store,
            "nodes",
            "NodeList",
            "v1",
            &[("labelSelector".to_owned(), "a in (b)".to_owned())].into(),
        );
        assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn queries_are_percent_decoded() {
        let uri: hyper::Uri = "/api/v1/nodes?labelSelector=a%3D1%2Cb&limit=5"
            .parse()
            .unwrap();
        let query = query(&uri);
        assert_eq!(query["labelSelector"], "a=1,b");
        assert_eq!(query["limit"], "5");
    }
}
