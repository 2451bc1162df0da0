//! The real `zerohop fleet` against the real kube-apiserver and etcd
//! (`tools/control-plane`): what the in-memory server of `agent_fleet.rs`
//! can only imitate is judged here by the server itself. Its continue
//! tokens, followed page by page to a whole list, with and without a label
//! selector; its 410 Gone to a continue token whose revision was compacted
//! away while the list was under way; its RBAC refusal; and `--watch`
//! through a real watch that shows changes as they are made and goes on
//! through an apiserver restart after a compaction, which expires its
//! resourceVersion.
//!
//! Each test starts a plane of its own: two restart it, and the lists of
//! the third count every Node the plane has.

#![cfg(feature = "cluster")]

mod agent_support;

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use agent_support::{fleet, now_minus, wait_until, zerohop};
use serde_json::{Value, json};
use zerohop_known::zerohop_api::CONDITION_TYPE as CONDITION;
use zerohop_testkit::control_plane::ControlPlane;

/// Generous for a debug build on two shared cores; a hang still fails.
const LIMIT: Duration = Duration::from_secs(120);

/// The page size `fleet` asks for.
const PAGE: usize = zerohop_agent::fleet::PAGE_SIZE as usize;

/// The agent's condition, with a heartbeat of now.
fn our_condition(ready: bool) -> Value {
    let now = now_minus(0);
    json!({
        "type": CONDITION,
        "status": if ready { "True" } else { "False" },
        "reason": if ready { "DataPathReady" } else { "RdmaPortDown" },
        "message": if ready { "no check fails" }
                   else { "RDMA004 mlx5_0/1: bring the link up; 1 failing: RDMA004" },
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    })
}

/// Node `n{index:04}` of a GPU pool: in pool `a`, `b` or `c` by its index,
/// with the agent's condition, not ready on every hundredth node. A Node is
/// created with its status (as the kubelet registers one).
fn pool_node(index: usize) -> Value {
    let pool = ["a", "b", "c"][index % 3];
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": format!("n{index:04}"),
            "labels": { "nvidia.com/gpu.present": "true", "pool": pool },
        },
        "status": { "conditions": [our_condition(!index.is_multiple_of(100))] },
    })
}

/// The names of the rows of a `fleet --format json` document.
fn row_names(document: &Value) -> Vec<String> {
    document["nodes"]
        .as_array()
        .expect("a list of nodes")
        .iter()
        .map(|row| row["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// `kubectl proxy` on a free port of 127.0.0.1: plain HTTP in front of the
/// API server, with the admin's credentials. Killed when dropped.
struct KubectlProxy {
    child: Child,
    address: SocketAddr,
}

impl KubectlProxy {
    fn start(plane: &ControlPlane) -> KubectlProxy {
        let mut child = plane
            .kubectl()
            .args(["proxy", "--port=0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl proxy starts");
        let stdout = child.stdout.take().expect("a piped stdout");
        let (said, heard) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = said.send(line);
            }
        });
        // "Starting to serve on 127.0.0.1:41253"
        let line = heard
            .recv_timeout(Duration::from_secs(30))
            .expect("kubectl proxy says where it serves");
        let address = line
            .rsplit(' ')
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("not an address: {line}"));
        KubectlProxy { child, address }
    }
}

impl Drop for KubectlProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request that went through a [`Recorder`], and its answer.
#[derive(Debug, Clone)]
struct Exchange {
    /// The request's path and query.
    target: String,
    /// The answer's HTTP status.
    status: u16,
    /// The `metadata.continue` of the answer, when it has one.
    continue_token: Option<String>,
}

impl Exchange {
    /// The value of the request's query parameter `name`, as sent.
    fn param(&self, name: &str) -> Option<&str> {
        let (_, query) = self.target.split_once('?')?;
        query
            .split('&')
            .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
    }

    /// The continue token the request sent, if any.
    fn sent_token(&self) -> Option<&str> {
        self.param("continue")
    }
}

/// A plain-HTTP forwarder between `fleet` and [`KubectlProxy`], which
/// passes every answer of the API server through unchanged: it sees each
/// request and the head of each answer in clear, one request per
/// connection (it asks for `Connection: close`), and can hold the first
/// request for a continued page until the test lets it go on.
struct Recorder {
    address: SocketAddr,
    exchanges: Arc<Mutex<Vec<Exchange>>>,
    hold: Hold,
}

/// Where a held request waits: a sender to say it arrived, a receiver to
/// wait on.
type Hold = Arc<Mutex<Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>>>;

impl Recorder {
    fn start(upstream: SocketAddr) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let address = listener.local_addr().unwrap();
        let exchanges = Arc::new(Mutex::new(Vec::new()));
        let hold: Hold = Arc::new(Mutex::new(None));
        let (log, gate) = (Arc::clone(&exchanges), Arc::clone(&hold));
        thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let (log, gate) = (Arc::clone(&log), Arc::clone(&gate));
                thread::spawn(move || {
                    let _ = forward(client, upstream, &log, &gate);
                });
            }
        });
        Recorder {
            address,
            exchanges,
            hold,
        }
    }

    /// Holds the next request for a continued page: the first receiver
    /// hears when it arrives, and it goes on when the sender is used.
    fn hold_next_continued(&self) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (arrived, held) = mpsc::channel();
        let (release, released) = mpsc::channel();
        *self.hold.lock().unwrap() = Some((arrived, released));
        (held, release)
    }

    /// The exchanges so far whose path starts with `path`, in order.
    fn exchanges(&self, path: &str) -> Vec<Exchange> {
        self.exchanges
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.target.starts_with(path))
            .cloned()
            .collect()
    }

    fn clear(&self) {
        self.exchanges.lock().unwrap().clear();
    }

    /// A kubeconfig for `fleet` that reaches the API server through this.
    fn kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("recorded.kubeconfig");
        let config = json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{ "name": "recorded",
                           "cluster": { "server": format!("http://{}", self.address) } }],
            "users": [{ "name": "proxy", "user": {} }],
            "contexts": [{ "name": "recorded",
                           "context": { "cluster": "recorded", "user": "proxy" } }],
            "current-context": "recorded",
        });
        std::fs::write(&path, config.to_string()).unwrap();
        path
    }
}

/// Forwards one request from `client` to `upstream` and its answer back,
/// and records both.
fn forward(
    client: TcpStream,
    upstream: SocketAddr,
    log: &Mutex<Vec<Exchange>>,
    hold: &Hold,
) -> std::io::Result<()> {
    client.set_read_timeout(Some(LIMIT))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut head = request_line.clone();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if !line.to_ascii_lowercase().starts_with("connection:") {
            head.push_str(&line);
        }
    }
    head.push_str("Connection: close\r\n\r\n");
    let target = request_line
        .split(' ')
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    if target.contains("continue=") {
        let held = hold.lock().unwrap().take();
        if let Some((arrived, released)) = held {
            let _ = arrived.send(());
            let _ = released.recv_timeout(LIMIT);
        }
    }
    // `fleet` sends GETs only: the head is the whole request.
    let mut server = TcpStream::connect(upstream)?;
    server.set_read_timeout(Some(LIMIT))?;
    server.write_all(head.as_bytes())?;
    // The head of the answer is recorded before any of it is passed on,
    // so that whatever `fleet` has read is recorded by then: its first 4
    // KiB (a list's metadata comes first, so its continue token is
    // there), or, for a watch, whose events may be far apart, its first
    // bytes.
    let wanted = if target.contains("watch=") { 1 } else { 4096 };
    let mut client = client;
    let mut start = Vec::new();
    let mut buffer = vec![0; 64 << 10];
    let mut ended = false;
    while start.len() < wanted {
        let read = server.read(&mut buffer)?;
        if read == 0 {
            ended = true;
            break;
        }
        start.extend_from_slice(&buffer[..read]);
    }
    let text = String::from_utf8_lossy(&start);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let continue_token = text
        .split_once("\"continue\":\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(token, _)| token.to_owned())
        .filter(|token| !token.is_empty());
    log.lock().unwrap().push(Exchange {
        target,
        status,
        continue_token,
    });
    client.write_all(&start)?;
    while !ended {
        let read = server.read(&mut buffer)?;
        ended = read == 0;
        client.write_all(&buffer[..read])?;
    }
    Ok(())
}

/// Checks that `pages` are one whole list: the first asks for no continue
/// token, each next one sends the token the server gave the one before,
/// the last was given none, and every one was answered 200.
fn assert_followed(pages: &[Exchange]) {
    // The list began at its first page.
    assert_eq!(pages[0].sent_token(), None, "{pages:#?}");
    for pair in pages.windows(2) {
        // Each page is the one the server's token named, as it wrote it.
        assert_eq!(
            pair[1].sent_token(),
            pair[0].continue_token.as_deref(),
            "{pages:#?}"
        );
    }
    // The server gave no token on the last page: the list ended there.
    assert_eq!(pages.last().unwrap().continue_token, None, "{pages:#?}");
    // Every page was served.
    assert!(pages.iter().all(|p| p.status == 200), "{pages:#?}");
    // Every page asked for the page size of `fleet`.
    let size = PAGE.to_string();
    assert!(
        pages.iter().all(|p| p.param("limit") == Some(&size)),
        "{pages:#?}"
    );
}

fn run_fleet(kubeconfig: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec![
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = fleet(&args, LIMIT);
    let document = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("not a JSON document ({e}): {out}\n{err}"));
    (code, document, err)
}

#[test]
fn a_list_follows_the_servers_continue_tokens_to_a_whole_fleet_and_a_selector_narrows_it() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    // Three pages of 500: a first, a continued one with a token to follow,
    // and a last.
    let count = 2 * PAGE + 1;
    plane.create_all((0..count).map(pool_node));
    let proxy = KubectlProxy::start(&plane);
    let recorder = Recorder::start(proxy.address);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = recorder.kubeconfig(dir.path());

    let (code, document, err) = run_fleet(&kubeconfig, &[]);
    // Every hundredth node is not ready: exit 1.
    assert_eq!(code, Some(1), "{err}");
    let names = row_names(&document);
    let unique: BTreeSet<&String> = names.iter().collect();
    // Every node once: none lost or repeated between pages.
    assert_eq!(unique.len(), count, "{}", document["summary"]);
    assert_eq!(names.len(), count);
    let expected: BTreeSet<String> = (0..count).map(|i| format!("n{i:04}")).collect();
    // And exactly the nodes created.
    assert_eq!(
        unique.into_iter().cloned().collect::<BTreeSet<_>>(),
        expected
    );
    // n0000, n0100 … n1000: eleven not ready, the rest ready.
    assert_eq!(
        document["summary"]["not_ready"], 11,
        "{}",
        document["summary"]
    );
    assert_eq!(document["summary"]["ready"], count - 11);
    let pages = recorder.exchanges("/api/v1/nodes");
    // 1,001 nodes in pages of 500: three requests, no more.
    assert_eq!(pages.len(), 3, "{pages:#?}");
    assert_followed(&pages);
    // The real server's own token: base64 of its JSON, not ours.
    assert!(
        pages[0]
            .continue_token
            .as_deref()
            .is_some_and(|t| t.starts_with("eyJ")),
        "{pages:#?}"
    );
    // Without the CRD the server answers 404 for the report objects and
    // fleet goes on with the conditions alone.
    let reports = recorder.exchanges("/apis/zerohop.dev/v1alpha1/datapathreports");
    assert_eq!(
        reports.iter().map(|e| e.status).collect::<Vec<_>>(),
        [404],
        "{reports:#?}"
    );
    assert_eq!(document["report_objects"], false);

    // pool != c: two nodes in three, 668 of them, on two pages of the
    // server's filtered list.
    recorder.clear();
    let (code, document, err) = run_fleet(&kubeconfig, &["-l", "pool!=c"]);
    assert_eq!(code, Some(1), "{err}");
    let names = row_names(&document);
    let expected: BTreeSet<String> = (0..count)
        .filter(|i| i % 3 != 2)
        .map(|i| format!("n{i:04}"))
        .collect();
    // Exactly the selected nodes, each once.
    assert_eq!(names.len(), expected.len());
    assert_eq!(names.into_iter().collect::<BTreeSet<_>>(), expected);
    // Of the eleven not ready, n0200, n0500 and n0800 are in pool c.
    assert_eq!(document["summary"]["not_ready"], 8);
    let pages = recorder.exchanges("/api/v1/nodes");
    // 668 selected nodes: two pages.
    assert_eq!(pages.len(), 2, "{pages:#?}");
    assert_followed(&pages);
    // The selector went with every page, continued ones included.
    assert!(
        pages
            .iter()
            .all(|p| p.param("labelSelector") == Some("pool%21%3Dc")),
        "{pages:#?}"
    );

    // The server's own parser refuses a selector that is not one.
    let (code, _, err) = fleet(
        &["--kubeconfig", kubeconfig.to_str().unwrap(), "-l", "pool c"],
        LIMIT,
    );
    // 2 for "could not read the cluster", with the server's 400 and a hint.
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("400") && err.contains("unable to parse requirement"),
        "{err}"
    );
    assert!(err.contains("--selector"), "{err}");

    // `--watch` reads the fleet once: one object to learn that it may,
    // then its reflector's list, page by page, from which its first view
    // comes.
    recorder.clear();
    let watching = Watching::start(&kubeconfig);
    let first = watching.until(LIMIT, |_| true);
    // The first view is the whole fleet.
    assert_eq!(first["summary"]["nodes"], count, "{}", first["summary"]);
    let lists: Vec<Exchange> = recorder
        .exchanges("/api/v1/nodes")
        .into_iter()
        .filter(|e| e.param("watch").is_none())
        .collect();
    // The probe, then three pages: not the three pages twice.
    assert_eq!(lists.len(), 4, "{lists:#?}");
    // The probe asks for one Node and does not follow its token.
    assert_eq!(lists[0].param("limit"), Some("1"), "{lists:#?}");
    assert_eq!(lists[0].status, 200);
    assert_followed(&lists[1..]);
    drop(watching);

    // A service account the server knows but RBAC gives nothing to.
    plane.kubectl_ok(
        &["create", "serviceaccount", "nobody", "-n", "default"],
        None,
    );
    let token = plane.kubectl_ok(&["create", "token", "nobody", "-n", "default"], None);
    let nobody = plane.write_token_kubeconfig(token.trim(), &dir.path().join("nobody.kubeconfig"));
    let (code, _, err) = fleet(&["--kubeconfig", nobody.to_str().unwrap()], LIMIT);
    // The server's RBAC refusal is exit 2 and names the role to bind.
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("403")
            && err.contains("system:serviceaccount:default:nobody")
            && err.contains("zerohop-fleet-reader"),
        "{err}"
    );
}

#[test]
fn a_list_whose_continue_token_was_compacted_away_is_listed_again_from_its_first_page() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    // Two pages: the second is asked for with a continue token.
    let count = PAGE + 1;
    plane.create_all((0..count).map(pool_node));
    let proxy = KubectlProxy::start(&plane);
    let recorder = Recorder::start(proxy.address);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = recorder.kubeconfig(dir.path());
    let (arrived, release) = recorder.hold_next_continued();
    let args = [
        "--kubeconfig".to_owned(),
        kubeconfig.to_str().unwrap().to_owned(),
        "--format".to_owned(),
        "json".to_owned(),
    ];
    let running = thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fleet(&args, LIMIT)
    });
    arrived
        .recv_timeout(LIMIT)
        .expect("fleet asks for its second page");
    // While fleet waits for its second page: a node is added that sorts
    // before the first page's end, so that only a list started again from
    // its first page sees it; etcd is compacted past the first page's
    // revision; and the API server restarts, so that its watch cache,
    // which would still serve the old revision, starts anew. On a real
    // cluster: the five-minute compaction, and a list that reaches another
    // API server (or the same one after a restart) for its next page.
    plane.create_all([pool_node(0)].map(|mut n| {
        n["metadata"]["name"] = json!("a-late");
        n
    }));
    plane.compact_etcd();
    plane.stop();
    plane.start_again();
    release.send(()).unwrap();
    let (code, out, err) = running.join().unwrap();
    let document: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}\n{err}"));
    let pages = recorder.exchanges("/api/v1/nodes");
    let statuses: Vec<u16> = pages.iter().map(|p| p.status).collect();
    // The real server answered 410 Gone to the held page, and fleet
    // listed again from the first page: two more pages.
    assert_eq!(statuses, [200, 410, 200, 200], "{pages:#?}\n{err}");
    // The 410 was for the token of the first page.
    assert_eq!(pages[1].sent_token(), pages[0].continue_token.as_deref());
    // The list that counts is whole and followed as one.
    assert_followed(&pages[2..]);
    // fleet says why it listed again.
    assert!(err.contains("continue token expired (410 Gone)"), "{err}");
    // Every hundredth node, and a-late (a copy of n0000), are not ready.
    assert_eq!(code, Some(1), "{err}");
    let names = row_names(&document);
    let unique: BTreeSet<&String> = names.iter().collect();
    // 501 nodes and a-late, each once: nothing of the first attempt kept.
    assert_eq!(names.len(), count + 1, "{}", document["summary"]);
    assert_eq!(unique.len(), count + 1);
    // The late node is there: the list is the one started again.
    assert!(names.iter().any(|n| n == "a-late"), "{names:?}");
}

/// What `fleet --watch` printed and logged, as it comes.
struct Watching {
    child: Child,
    views: mpsc::Receiver<Value>,
    log: Arc<Mutex<String>>,
}

impl Watching {
    fn start(kubeconfig: &Path) -> Watching {
        let mut child = zerohop()
            .args(["fleet", "--watch", "--format", "json", "--kubeconfig"])
            .arg(kubeconfig)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("fleet --watch starts");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (shown, views) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let view = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON view ({e}): {line}"));
                if shown.send(view).is_err() {
                    return;
                }
            }
        });
        let log = Arc::new(Mutex::new(String::new()));
        let lines = Arc::clone(&log);
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = lines.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        Watching { child, views, log }
    }

    /// The first view within `limit` for which `wanted` holds.
    fn until(&self, limit: Duration, wanted: impl Fn(&Value) -> bool) -> Value {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.views.recv_timeout(left) {
                Ok(view) if wanted(&view) => return view,
                Ok(_) => {}
                Err(_) => panic!(
                    "no such view within {limit:?}; fleet logged:\n{}",
                    self.log()
                ),
            }
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A row of a view by node name.
fn row<'a>(view: &'a Value, name: &str) -> Option<&'a Value> {
    view["nodes"].as_array()?.iter().find(|r| r["name"] == name)
}

fn state_of(view: &Value, name: &str) -> Option<String> {
    row(view, name).and_then(|r| r["state"].as_str().map(str::to_owned))
}

/// Writes the agent's condition on `node` through the status subresource,
/// as the agent does (a strategic merge keeps the kubelet's conditions).
fn set_condition(plane: &ControlPlane, node: &str, ready: bool) {
    let patch = json!({ "status": { "conditions": [our_condition(ready)] } });
    plane.kubectl_ok(
        &[
            "patch",
            "node",
            node,
            "--subresource=status",
            "--type=strategic",
            "-p",
            &patch.to_string(),
        ],
        None,
    );
}

fn gpu_node(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "labels": { "nvidia.com/gpu.present": "true" } },
    })
}

#[test]
fn watch_shows_changes_as_they_happen_and_lists_again_after_a_compaction_and_a_restart() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    // The agent's CRD and the zerohop-fleet-reader ClusterRole, from its
    // own manifests; fleet runs as a service account bound to that role,
    // so that the role is proved enough for a list and a watch.
    let manifests = zerohop()
        .args(["agent", "--print-manifests"])
        .output()
        .unwrap();
    assert!(manifests.status.success());
    plane.apply(std::str::from_utf8(&manifests.stdout).unwrap());
    plane.wait_for_crds();
    plane.kubectl_ok(
        &["create", "serviceaccount", "fleet-watcher", "-n", "default"],
        None,
    );
    plane.kubectl_ok(
        &[
            "create",
            "clusterrolebinding",
            "fleet-watcher",
            "--clusterrole=zerohop-fleet-reader",
            "--serviceaccount=default:fleet-watcher",
        ],
        None,
    );
    // Granted a moment after the binding is created.
    plane.await_can_i(
        "system:serviceaccount:default:fleet-watcher",
        &[
            &["watch", "nodes", "--all-namespaces"],
            &["watch", "datapathreports.zerohop.dev", "--all-namespaces"],
        ],
        true,
    );
    let token = plane.kubectl_ok(
        &[
            "create",
            "token",
            "fleet-watcher",
            "-n",
            "default",
            "--duration=1h",
        ],
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig =
        plane.write_token_kubeconfig(token.trim(), &dir.path().join("watcher.kubeconfig"));

    let mut broken = gpu_node("w-broken");
    broken["status"] = json!({ "conditions": [our_condition(false)] });
    let mut ready = gpu_node("w-ready");
    ready["status"] = json!({ "conditions": [our_condition(true)] });
    plane.create_all([broken, ready, gpu_node("w-noagent")]);
    // w-broken's report names a check its condition message does not, so
    // that a view shows which one it read.
    let report = json!({
        "apiVersion": "zerohop.dev/v1alpha1", "kind": "DataPathReport",
        "metadata": { "name": "w-broken" },
        "node": "w-broken",
        "condition": { "status": "False", "reason": "NfsNotRdma" },
        "pass": { "intervalSeconds": 300 },
        "findings": [{ "id": "NFS001", "status": "fail" }],
    });
    plane.kubectl_ok(&["create", "-f", "-"], Some(&report.to_string()));

    let watching = Watching::start(&kubeconfig);
    let first = watching.until(LIMIT, |_| true);
    // Read under the fleet-reader role: the report objects too.
    assert_eq!(first["report_objects"], true, "{first}");
    // The three nodes as created: not ready, ready, no agent.
    assert_eq!(state_of(&first, "w-broken").as_deref(), Some("NotReady"));
    assert_eq!(state_of(&first, "w-ready").as_deref(), Some("Ready"));
    assert_eq!(state_of(&first, "w-noagent").as_deref(), Some("NoAgent"));
    // The failing check comes from the report object, not the message.
    assert_eq!(
        row(&first, "w-broken").unwrap()["failing"],
        json!(["NFS001"])
    );

    // A change as it happens: shown within seconds (views are at most one
    // a second), by the watch, with nothing else to prompt it.
    set_condition(&plane, "w-broken", true);
    watching.until(Duration::from_secs(20), |v| {
        state_of(v, "w-broken").as_deref() == Some("Ready")
    });

    // An outage after a compaction: writes fleet does not watch (ConfigMaps)
    // move etcd's revision past the one its watch has reached, etcd is
    // compacted up to now, and the API server stops. Restarted, its watch
    // cache begins at the current revision, so a watch resumed from the old
    // one is answered 410 Gone, and the list it falls back to reads what
    // changed.
    for i in 0..5 {
        plane.kubectl_ok(
            &["create", "configmap", &format!("move-{i}"), "-n", "default"],
            None,
        );
    }
    plane.compact_etcd();
    plane.stop();
    plane.start_again();
    // Changes after the restart: a new node, an agent that started on
    // w-noagent, and w-ready broken.
    let mut late = gpu_node("w-late");
    late["status"] = json!({ "conditions": [our_condition(false)] });
    plane.create_all([late]);
    set_condition(&plane, "w-noagent", true);
    set_condition(&plane, "w-ready", false);
    let after = watching.until(LIMIT, |v| {
        state_of(v, "w-late").as_deref() == Some("NotReady")
            && state_of(v, "w-noagent").as_deref() == Some("Ready")
            && state_of(v, "w-ready").as_deref() == Some("NotReady")
    });
    // And what changed before the outage is still shown.
    assert_eq!(state_of(&after, "w-broken").as_deref(), Some("Ready"));
    // Nothing twice: the list after the 410 replaced the store.
    assert_eq!(after["summary"]["nodes"], 4, "{after}");
    let log = watching.log();
    // The real server's answer to the resumed watch: 410 Gone, reason
    // Expired, "too old resource version", and fleet listed again.
    assert!(
        log.contains("410 Gone") && log.contains("code=410"),
        "{log}"
    );
    assert!(log.contains("too old resource version"), "{log}");

    // Ctrl-C ends the watch with 130, as every command.
    let mut watching = watching;
    let sent = std::process::Command::new("kill")
        .args(["-INT", &watching.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let ended = wait_until(Duration::from_secs(10), || {
        watching.child.try_wait().unwrap().is_some()
    });
    // It ends at once, restarts or not.
    assert!(ended, "fleet --watch ends on SIGINT");
    assert_eq!(watching.child.wait().unwrap().code(), Some(130));
}
