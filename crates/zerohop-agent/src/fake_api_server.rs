//! A stateful Kubernetes API server in memory, served over HTTP on
//! `127.0.0.1`, for end-to-end tests of the real `agent` and `fleet`
//! binaries where no kube-apiserver can run.
//!
//! It implements what those binaries use, with the API server's semantics:
//! Nodes (get, paginated list with label selectors, watch, server-side
//! apply of `status.conditions` as a list map keyed by `type`), events
//! (create, get, merge patch; 409 on a name that exists) and
//! `DataPathReport` objects (apply, paginated list, watch; 404 while the
//! CRD is not installed). Every request is recorded, and faults (a status,
//! a delay, a huge body) can be injected by path.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
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
}

#[derive(Debug, Clone)]
struct Change {
    resource: &'static str,
    kind: &'static str,
    object: Value,
}

#[derive(Debug, Default)]
struct Store {
    nodes: BTreeMap<String, Value>,
    events: BTreeMap<(String, String), Value>,
    reports: BTreeMap<String, Value>,
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
        let kind = if store.nodes.contains_key(&name) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        let revision = store.bump(&mut node);
        store.nodes.insert(name, node.clone());
        let change = Change {
            resource: "nodes",
            kind,
            object: node,
        };
        store.log.push((revision, change.clone()));
        // Watches that are open see it now; later ones read it from the log.
        let _ = self.changes.send(change);
    }

    /// The Node named `name`.
    pub fn node(&self, name: &str) -> Option<Value> {
        self.store().nodes.get(name).cloned()
    }

    /// Installs (or removes) the `DataPathReport` CRD.
    pub fn set_report_crd(&self, installed: bool) {
        self.store().crd_installed = installed;
    }

    /// The `DataPathReport` named `name`.
    pub fn report(&self, name: &str) -> Option<Value> {
        self.store().reports.get(name).cloned()
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
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_string()))
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
            return status(code, "Injected", "injected by the test");
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
                Some(node) => full(StatusCode::OK, node.clone()),
                None => status(404, "NotFound", &format!("nodes \"{name}\" not found")),
            }
        }
        (Method::PATCH, ["api", "v1", "nodes", name, "status"]) => {
            if content_type.as_deref() != Some("application/apply-patch+yaml") {
                return status(
                    415,
                    "UnsupportedMediaType",
                    "only server-side apply is served",
                );
            }
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let Some(mut node) = store.nodes.get(*name).cloned() else {
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
            let revision = store.bump(&mut node);
            store.nodes.insert((*name).to_owned(), node.clone());
            let change = Change {
                resource: "nodes",
                kind: "MODIFIED",
                object: node.clone(),
            };
            store.log.push((revision, change.clone()));
            let _ = changes.send(change);
            full(StatusCode::OK, node)
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
        (_, ["apis", "zerohop.dev", "v1alpha1", "datapathreports", ..])
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
        (Method::GET, ["apis", "zerohop.dev", "v1alpha1", "datapathreports"]) => {
            if query.get("watch").is_some_and(|w| w != "false" && w != "0") {
                return watch(&store, &changes, "datapathreports", &query);
            }
            list(
                &store,
                "datapathreports",
                "DataPathReportList",
                "zerohop.dev/v1alpha1",
                &query,
            )
        }
        (Method::PATCH, ["apis", "zerohop.dev", "v1alpha1", "datapathreports", name]) => {
            if content_type.as_deref() != Some("application/apply-patch+yaml") {
                return status(
                    415,
                    "UnsupportedMediaType",
                    "only server-side apply is served",
                );
            }
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            let mut object = body;
            let existing = store.reports.get(*name).cloned();
            object["metadata"]["uid"] = existing.as_ref().map_or_else(
                || json!(format!("uid-report-{name}")),
                |e| e["metadata"]["uid"].clone(),
            );
            let revision = store.bump(&mut object);
            store.reports.insert((*name).to_owned(), object.clone());
            let kind = if existing.is_some() {
                "MODIFIED"
            } else {
                "ADDED"
            };
            let change = Change {
                resource: "datapathreports",
                kind,
                object: object.clone(),
            };
            store.log.push((revision, change.clone()));
            let _ = changes.send(change);
            full(StatusCode::OK, object)
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

fn list(
    store: &Arc<Mutex<Store>>,
    resource: &'static str,
    kind: &str,
    api_version: &str,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let store = store.lock().unwrap_or_else(|p| p.into_inner());
    let objects = if resource == "nodes" {
        &store.nodes
    } else {
        &store.reports
    };
    let mut items = Vec::new();
    for object in objects.values() {
        match query.get("labelSelector") {
            Some(selector) => match selects(selector, &object["metadata"]["labels"]) {
                Some(true) => items.push(object.clone()),
                Some(false) => {}
                None => {
                    return status(
                        400,
                        "BadRequest",
                        &format!("unable to parse requirement: {selector}"),
                    );
                }
            },
            None => items.push(object.clone()),
        }
    }
    let start: usize = query
        .get("continue")
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let limit: usize = query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let end = start.saturating_add(limit).min(items.len());
    let page: Vec<Value> = items
        .get(start..end)
        .map(<[Value]>::to_vec)
        .unwrap_or_default();
    let mut metadata = json!({ "resourceVersion": store.revision.to_string() });
    if end < items.len() {
        metadata["continue"] = json!(end.to_string());
    }
    full(
        StatusCode::OK,
        json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata, "items": page }),
    )
}

/// A watch: the changes after `resourceVersion`, then every new one, as
/// newline-separated JSON events, until `timeoutSeconds` (at most 60 s).
fn watch(
    store: &Arc<Mutex<Store>>,
    changes: &broadcast::Sender<Change>,
    resource: &'static str,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
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
            .filter(|(revision, change)| *revision > since && change.resource == resource)
            .map(|(_, change)| change.clone())
            .collect()
    };
    let (sender, frames) = tokio::sync::mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        let line = |change: &Change| {
            Bytes::from(format!(
                "{}\n",
                json!({ "type": change.kind, "object": change.object })
            ))
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
                    Ok(change) if change.resource == resource => {
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
    fn queries_are_percent_decoded() {
        let uri: hyper::Uri = "/api/v1/nodes?labelSelector=a%3D1%2Cb&limit=5"
            .parse()
            .unwrap();
        let query = query(&uri);
        assert_eq!(query["labelSelector"], "a=1,b");
        assert_eq!(query["limit"], "5");
    }
}
